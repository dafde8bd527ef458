"""The SageMaker Python SDK v3 (ModelTrainer, ModelBuilder), as its users run it, against the emulator."""

from __future__ import annotations

import pytest

from tests.sdk.venvs import V3, run_clients

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def v3_results(emulator):
    run_clients(emulator.endpoint_url, emulator.home)
    return V3.results()


def test_model_trainer_runs_its_drivers_with_the_role_the_sdk_made(v3_results, emulator):
    """The SDK's role check (IAM SimulatePrincipalPolicy) passes for the role its IamRoleResolver created;
    the job runs the SDK's own ContainerEntrypoint, which reads its sm_drivers and code channels."""
    import boto3

    assert v3_results["training_status"] == "Completed"
    assert v3_results["entrypoint"] == ["/bin/bash"] and {"code", "sm_drivers", "train"} == set(v3_results["channels"])
    iam = boto3.client("iam", endpoint_url=emulator.endpoint_url, region_name="us-east-1")

    def decision(action: str, resource: str = "*") -> str:
        answer = iam.simulate_principal_policy(
            PolicySourceArn=v3_results["role"], ActionNames=[action], ResourceArns=[resource]
        )
        return answer["EvaluationResults"][0]["EvalDecision"]

    job_arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/sdk-v3-x"
    assert decision("ecr:GetAuthorizationToken") == decision("sagemaker:CreateTrainingJob", job_arn) == "allowed"
    assert decision("sagemaker:CreateTrainingJob") == decision("ec2:RunInstances") == "implicitDeny"  # scoped; none


def test_model_builder_builds_deploys_and_the_endpoint_answers(v3_results, clients):
    assert v3_results["endpoint_accuracy"] >= 0.9
    model = clients["sagemaker"].describe_model(ModelName=v3_results["model"])
    assert "VpcConfig" not in model  # absent, as SageMaker answers for a model created without one
    endpoints = [e["EndpointName"] for e in clients["sagemaker"].list_endpoints()["Endpoints"]]
    assert "sdk-v3-endpoint" not in endpoints  # Endpoint.delete()
