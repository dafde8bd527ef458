"""The deployment stages, as the documentation shows them: Neo compilation, a real-time endpoint (autoscaled,
blue/green updates) and a Greengrass v2 edge deployment.

tests/docs/test_examples.py imports this DAG and validates every stage's spec.
"""

from __future__ import annotations

import json
from pathlib import Path

import pendulum
from airflow.sdk import DAG

# [START imports]
from mlscale.operators import (
    GreengrassEdgeDeployOperator,
    SageMakerEndpointDeployOperator,
    SageMakerNeoCompilationOperator,
)
from mlscale.specs import CompilationSpec, EdgeDeploymentSpec, EndpointSpec

# [END imports]

INCLUDE = Path(__file__).resolve().parents[2] / "include"
ROLE_ARN = "arn:aws:iam::111122223333:role/mlscale-sagemaker"
INFERENCE_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311-ubuntu22.04-sagemaker"
SAMPLE = [[0.0] * 64]  # one flattened 8x8 image

with DAG(dag_id="docs_deployment_stages", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None):
    # [START compile]
    compile_model = SageMakerNeoCompilationOperator(
        task_id="compile",
        spec=CompilationSpec(
            model_artifact="s3://my-bucket/models/job-1/output/model.tar.gz",
            role_arn=ROLE_ARN,
            output_uri="s3://my-bucket/compiled/",
            input_shapes={"input0": [1, 64]},  # the model's input, as the endpoint receives it
            framework="PYTORCH",
            target_device="ml_c5",  # or target_platform={"Os": "LINUX", "Arch": "ARM64"}
        ),
    )
    # [END compile]

    # [START endpoint]
    deploy_endpoint = SageMakerEndpointDeployOperator(
        task_id="deploy_endpoint",
        spec=EndpointSpec(
            endpoint_name="digits",
            model_artifact=compile_model.output["compiled_artifact"],
            role_arn=ROLE_ARN,
            image_uri=INFERENCE_IMAGE,
            instance_type="ml.c5.large",
            instance_count=1,
            min_capacity=1,  # Application Auto Scaling on invocations per instance
            max_capacity=4,
            invocations_per_instance=70.0,
            traffic_routing="CANARY",  # an update shifts traffic blue -> green with deployment guardrails
            canary_percent=10,
            wait_seconds=300,  # the bake before all traffic moves
            rollback_alarms=["digits-5xx"],  # CloudWatch alarms that roll the update back
            sample_body=json.dumps(SAMPLE),  # invoked once the endpoint is InService
        ),
    )
    # [END endpoint]

    # [START edge]
    deploy_edge = GreengrassEdgeDeployOperator(
        task_id="deploy_edge",
        spec=EdgeDeploymentSpec(
            component_name="com.example.DigitsClassifier",
            compiled_artifact=compile_model.output["compiled_artifact"],
            app_source=str(INCLUDE / "edge" / "inference_app.py"),  # runs on each device
            artifact_prefix="s3://my-bucket/greengrass/",
            thing_group_name="edge-fleet",
            sample=json.dumps(SAMPLE),  # each device classifies it once as a smoke test
            failure_handling="ROLLBACK",
            abort_threshold_percent=50.0,
        ),
    )
    # [END edge]
