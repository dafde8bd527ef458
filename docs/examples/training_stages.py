"""The training stages, as the documentation shows them: a SageMaker training job, an AWS Batch multi-node job,
and the stage cache.

tests/docs/test_examples.py imports this DAG and validates every stage's spec.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG

# [START imports]
from mlscale.operators import BatchMultiNodeTrainingOperator, SageMakerScriptTrainingOperator
from mlscale.specs import BatchTrainingSpec, CacheConfig, InputChannel, TrainingSpec

# [END imports]

INCLUDE = Path(__file__).resolve().parents[2] / "include"

with DAG(dag_id="docs_training_stages", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None):
    # [START training]
    train = SageMakerScriptTrainingOperator(
        task_id="train",
        aws_conn_id="aws_default",
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),  # packed to sourcedir.tar.gz
            role_arn="arn:aws:iam::111122223333:role/mlscale-sagemaker",
            output_path="s3://my-bucket/models",
            image_uri="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
            instance_type="ml.g5.2xlarge",
            instance_count=2,
            distribution="torch_distributed",
            hyperparameters={"epochs": 12, "lr": 0.003},
            inputs={
                "train": "s3://my-bucket/data/train/",
                "test": InputChannel("s3://my-bucket/data/test/", input_mode="FastFile"),
            },
            metric_definitions={"test:accuracy": r"test_accuracy=([0-9.]+)"},
            max_runtime_seconds=3600,
        ),
    )
    # [END training]

    # [START batch]
    train_on_batch = BatchMultiNodeTrainingOperator(
        task_id="train_on_batch",
        spec=BatchTrainingSpec(
            job_queue="arn:aws:batch:us-east-1:111122223333:job-queue/dl-TrainingQueue",  # or a name
            job_definition="dl-TrainingJobDefinition",  # or image="..." to have one registered
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            output_path="s3://my-bucket/models",
            node_count=4,
            vcpus=96,
            memory_mib=1_100_000,
            gpus=8,
            hyperparameters={"epochs": 12},
            inputs={"train": "s3://my-bucket/shards/train/", "test": "/mnt/shared/test"},
            metric_definitions={"test:accuracy": r"test_accuracy=([0-9.]+)"},
            timeout_seconds=6 * 3600,
            retry_attempts=2,
            retry_on_exit=[{"on_status_reason": "Host EC2*", "action": "RETRY"}, {"on_reason": "*", "action": "EXIT"}],
        ),
    )
    # [END batch]

    # [START cache]
    cached_train = SageMakerScriptTrainingOperator(
        task_id="cached_train",
        spec=train.spec,
        cache=CacheConfig(
            enabled=True,  # may be a template: "{{ params.cache }}"
            expire_after="P30D",  # ISO 8601 duration; None: never expires
            version="1",  # part of the fingerprint: bump it to invalidate every entry
            ignored_inputs=["test"],  # inputs (channel names, or "code" / "image") left out of it
            location="s3://my-bucket/mlscale/cache",  # where its entries live; else [mlscale] cache_location
        ),
    )
    # [END cache]
