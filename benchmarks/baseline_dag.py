"""Baseline for the parse-time benchmark: the same training step with only the provider's operator."""

import pendulum
from airflow.providers.amazon.aws.operators.sagemaker import SageMakerTrainingOperator
from airflow.sdk import DAG, task

with DAG(dag_id="provider_baseline", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None):

    @task
    def stage_raw_data() -> dict:
        return {}

    train = SageMakerTrainingOperator(
        task_id="train",
        config={
            "TrainingJobName": "baseline-{{ ts_nodash }}",
            "AlgorithmSpecification": {"TrainingImage": "image:1", "TrainingInputMode": "File"},
            "RoleArn": "arn:aws:iam::123456789012:role/x",
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/models"},
            "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        },
        wait_for_completion=True,
    )
    stage_raw_data() >> train
