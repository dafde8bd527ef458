"""Submit and wait as two tasks: each stage with `wait_for_completion=False`, then its sensor.

The provider's own pattern, for a job another system starts or a wait you want to see as a task of its own.
The training sensor defers to the triggerer (the default); the endpoint sensor shows `mode="reschedule"`,
which frees the worker slot between pokes without a triggerer. `data_prefix` holds train/ and test/.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG

from mlscale.operators import SageMakerEndpointDeployOperator, SageMakerScriptTrainingOperator
from mlscale.params import form_param
from mlscale.sensors import EndpointSensor, TrainingJobSensor
from mlscale.specs import EndpointSpec, TrainingSpec
from mlscale_example.settings import setting

INCLUDE = Path(__file__).resolve().parent.parent / "include"
BUCKET, ROLE_ARN = setting("bucket"), setting("role_arn")

with DAG(
    dag_id="mlscale_submit_and_sense",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule=None,
    tags=["mlscale", "example"],
    params={
        "data_prefix": form_param(f"s3://{BUCKET}/mlscale/minimal/data/", type="string", pattern=r"^s3://"),
        "epochs": form_param(2, type="integer", minimum=1, maximum=200),
    },
) as dag:
    submit_training = SageMakerScriptTrainingOperator(
        task_id="submit_training",
        wait_for_completion=False,
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            role_arn=ROLE_ARN,
            image_uri=setting("training_image"),
            output_path=f"s3://{BUCKET}/mlscale/submit-and-sense/models",
            instance_type="ml.c5.xlarge",
            hyperparameters={"epochs": "{{ params.epochs }}"},
            inputs={"train": "{{ params.data_prefix }}train/", "test": "{{ params.data_prefix }}test/"},
            metric_definitions={"test:accuracy": r"test_accuracy=([0-9.]+)"},
        ),
    )
    trained = TrainingJobSensor(
        task_id="training_done", job_name=submit_training.output["job_name"], poke_interval=5, timeout=3600
    )
    submit_endpoint = SageMakerEndpointDeployOperator(
        task_id="submit_endpoint",
        wait_for_completion=False,
        spec=EndpointSpec(
            endpoint_name="mlscale-submit-and-sense",
            model_artifact=trained.output["model_artifact"],
            role_arn=ROLE_ARN,
            image_uri=setting("inference_image"),
            wait_seconds=0,
        ),
    )
    # A reschedule shorter than ~15 s meets the scheduler race the triggers wait out (apache/airflow#72716):
    # "finished with state success, but the task instance's state attribute is queued" (seen at 5 s).
    EndpointSensor(
        task_id="endpoint_in_service",
        endpoint_name=submit_endpoint.output["endpoint_name"],
        mode="reschedule",
        deferrable=False,
        poke_interval=20,
        timeout=1800,
    )
