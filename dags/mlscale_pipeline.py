"""mlscale's example pipeline: stage the digits data, then train a CNN with DDP on SageMaker.

Runs against AWS or the local emulator: only the `aws_default` connection
differs (`endpoint_url` in its extra points it at the emulator). Later stages
(ETL, data quality, shards, evaluation, compilation, deployment) hang off
this spine as they are built.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import DAG, Param, task

from mlscale.operators import SageMakerScriptTrainingOperator
from mlscale.specs import TrainingSpec

AWS_CONN_ID = os.environ.get("MLSCALE_AWS_CONN_ID", "aws_default")
BUCKET = os.environ.get("MLSCALE_BUCKET", "mlscale-demo")
ROLE_ARN = os.environ.get("MLSCALE_ROLE_ARN", "arn:aws:iam::123456789012:role/mlscale-sagemaker")
# AWS's PyTorch training container (CPU); pick the region's registry on AWS.
TRAINING_IMAGE = os.environ.get(
    "MLSCALE_TRAINING_IMAGE",
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
)
INCLUDE = Path(__file__).resolve().parent.parent / "include"

with DAG(
    dag_id="mlscale_pipeline",
    description="ETL -> train -> evaluate -> deploy, after the AWS whitepaper Power Machine Learning at Scale",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule=None,
    catchup=False,
    max_active_runs=2,
    render_template_as_native_obj=True,
    tags=["mlscale", "sagemaker"],
    params={
        "instance_type": Param("ml.c5.xlarge", type="string", pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$",
                               description="SageMaker training instance type"),
        "instance_count": Param(2, type="integer", minimum=1, maximum=16,
                                description="Training instances; more than one trains with DDP"),
        "epochs": Param(12, type="integer", minimum=1, maximum=200),
        "poll_interval": Param(5, type="integer", minimum=1, maximum=300,
                               description="Seconds between status checks of long-running jobs"),
    },  # fmt: skip
) as dag:

    @task
    def stage_raw_data(data_interval_start=None) -> dict:
        """Put the raw digits data in S3 (the data-stage issue replaces this with Athena ETL)."""
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from mlscale.datasets.digits import stage_digits

        s3 = S3Hook(aws_conn_id=AWS_CONN_ID)
        if not s3.check_for_bucket(BUCKET):
            s3.create_bucket(BUCKET)
        prefix = f"mlscale/raw/digits/dt={data_interval_start:%Y-%m-%d}"
        return stage_digits(s3.get_conn(), BUCKET, prefix)

    raw = stage_raw_data()

    train = SageMakerScriptTrainingOperator(
        task_id="train",
        aws_conn_id=AWS_CONN_ID,
        poll_interval="{{ params.poll_interval }}",
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            role_arn=ROLE_ARN,
            image_uri=TRAINING_IMAGE,
            output_path=f"s3://{BUCKET}/mlscale/models",
            instance_type="{{ params.instance_type }}",
            instance_count="{{ params.instance_count }}",
            distribution="torch_distributed",
            hyperparameters={"epochs": "{{ params.epochs }}", "batch-size": 64, "lr": 0.003},
            inputs={
                "train": "{{ ti.xcom_pull(task_ids='stage_raw_data')['train'] }}",
                "test": "{{ ti.xcom_pull(task_ids='stage_raw_data')['test'] }}",
            },
            metric_definitions={
                "train:loss": r"train_loss=([0-9.]+)",
                "test:loss": r"test_loss=([0-9.]+)",
                "test:accuracy": r"test_accuracy=([0-9.]+)",
            },
            max_runtime_seconds=3600,
            tags={"project": "mlscale"},
        ),
    )

    raw >> train
