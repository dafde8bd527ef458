"""Baseline for the parse-time benchmark: the pipeline's core with the Amazon provider's operators only.

Athena ETL, a training job, a Batch Transform and an endpoint: what a DAG author writes without mlscale.
"""

import pendulum
from airflow.providers.amazon.aws.operators.athena import AthenaOperator
from airflow.providers.amazon.aws.operators.sagemaker import (
    SageMakerEndpointOperator,
    SageMakerTrainingOperator,
    SageMakerTransformOperator,
)
from airflow.sdk import DAG, chain

ROLE = "arn:aws:iam::123456789012:role/x"

with DAG(dag_id="provider_baseline", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None):
    etl = AthenaOperator(task_id="etl", query="SELECT 1", database="mlscale", output_location="s3://bucket/athena/")
    train = SageMakerTrainingOperator(
        task_id="train",
        config={
            "TrainingJobName": "baseline-{{ ts_nodash }}",
            "AlgorithmSpecification": {"TrainingImage": "image:1", "TrainingInputMode": "File"},
            "RoleArn": ROLE,
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/models"},
            "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        },
    )
    transform = SageMakerTransformOperator(
        task_id="evaluate",
        config={
            "Model": {
                "ModelName": "baseline-{{ ts_nodash }}",
                "ExecutionRoleArn": ROLE,
                "PrimaryContainer": {"Image": "image:1", "ModelDataUrl": "s3://bucket/models/model.tar.gz"},
            },
            "Transform": {
                "TransformJobName": "baseline-{{ ts_nodash }}",
                "ModelName": "baseline-{{ ts_nodash }}",
                "TransformInput": {
                    "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/eval/"}}
                },
                "TransformOutput": {"S3OutputPath": "s3://bucket/predictions/"},
                "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
            },
        },
    )
    endpoint = SageMakerEndpointOperator(
        task_id="deploy_endpoint",
        config={
            "EndpointConfig": {
                "EndpointConfigName": "baseline-{{ ts_nodash }}",
                "ProductionVariants": [
                    {
                        "VariantName": "AllTraffic",
                        "ModelName": "baseline-{{ ts_nodash }}",
                        "InitialInstanceCount": 1,
                        "InstanceType": "ml.c5.large",
                    }
                ],
            },
            "Endpoint": {"EndpointName": "baseline", "EndpointConfigName": "baseline-{{ ts_nodash }}"},
        },
    )
    chain(etl, train, transform, endpoint)
