"""The smallest mlscale pipeline: train on an S3 prefix, evaluate with a quality gate (and, with
gate_mode=manual, a person who approves the model in the Airflow UI), deploy an endpoint.

Copy this file to start a DAG of your own. `data_prefix` holds train/ and test/ (the training channels)
and eval/features/ + eval/labels/ (CSV, for Batch Transform). Settings come from Airflow's [mlscale_example]
config section; `mlscale_pipeline` adds ETL, data quality, sharding, FSx, diagnosis, Neo and the edge.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG, task

from mlscale.operators import (
    ModelApprovalOperator,
    SageMakerBatchEvaluationOperator,
    SageMakerEndpointDeployOperator,
    SageMakerScriptTrainingOperator,
)
from mlscale.params import form_param
from mlscale.specs import EndpointSpec, EvaluationSpec, TrainingSpec
from mlscale_example.settings import setting

INCLUDE = Path(__file__).resolve().parent.parent / "include"
BUCKET, ROLE_ARN = setting("bucket"), setting("role_arn")
DATA = "{{ params.data_prefix.rstrip('/') }}"

with DAG(
    dag_id="mlscale_minimal",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule=None,
    tags=["mlscale", "example"],
    params={
        "data_prefix": form_param(f"s3://{BUCKET}/mlscale/minimal/data/", type="string", pattern=r"^s3://"),
        "instance_count": form_param(1, type="integer", minimum=1, maximum=16),
        "epochs": form_param(3, type="integer", minimum=1, maximum=200),
        "min_accuracy": form_param(0.9, type="number", minimum=0, maximum=1),
        "poll_interval": form_param(
            30,
            type="integer",
            minimum=1,
            maximum=300,
            description="Seconds between status checks of the jobs and the endpoint",
        ),
        "gate_mode": form_param(
            "auto",
            enum=["auto", "manual"],
            description="manual: a model that passes the gate waits for a person's Approve",
        ),
    },
) as dag:
    train = SageMakerScriptTrainingOperator(
        task_id="train",
        poll_interval="{{ params.poll_interval }}",
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            role_arn=ROLE_ARN,
            image_uri=setting("training_image"),
            output_path=f"s3://{BUCKET}/mlscale/minimal/models",
            instance_type="ml.c5.xlarge",
            instance_count="{{ params.instance_count }}",
            distribution="torch_distributed",
            hyperparameters={"epochs": "{{ params.epochs }}"},
            inputs={"train": f"{DATA}/train/", "test": f"{DATA}/test/"},
            metric_definitions={"test:accuracy": r"test_accuracy=([0-9.]+)"},
        ),
    )
    evaluate = SageMakerBatchEvaluationOperator(
        task_id="evaluate",
        poll_interval="{{ params.poll_interval }}",
        spec=EvaluationSpec(
            model_artifact=train.output["model_artifact"],
            role_arn=ROLE_ARN,
            image_uri=setting("inference_image"),
            features_uri=f"{DATA}/eval/features/",
            labels_uri=f"{DATA}/eval/labels/",
            output_uri=f"s3://{BUCKET}/mlscale/minimal/evaluation/{{{{ run_id | replace(':', '-') }}}}/",
            model_package_group="mlscale-minimal",
            min_value="{{ params.min_accuracy }}",
            manual_approval="{{ params.gate_mode == 'manual' }}",
        ),
    )

    @task.short_circuit
    def approved(decision: str) -> bool:
        return decision in ("Approved", "PendingManualApproval")  # a pending model goes to a person

    approve = ModelApprovalOperator(
        task_id="approve",
        model_package_arn=evaluate.output["model_package_arn"],
        evaluation=evaluate.output,
        response_timeout_minutes=60,
    )

    deploy = SageMakerEndpointDeployOperator(
        task_id="deploy",
        poll_interval="{{ params.poll_interval }}",
        spec=EndpointSpec(
            endpoint_name="mlscale-minimal",
            model_artifact=train.output["model_artifact"],
            role_arn=ROLE_ARN,
            image_uri=setting("inference_image"),
            wait_seconds=0,
        ),
    )
    approved(evaluate.output["decision"]) >> approve >> deploy
