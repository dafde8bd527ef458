""" "Does not exist" is decided from the error's code: a throttle or an AccessDenied is raised, never taken for a
missing resource (which led to a second create), and no decision reads an error's message."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from mlscale.operators import SageMakerEndpointDeployOperator
from mlscale.specs import EndpointSpec
from tests.conftest import ROLE_ARN


def operator_with(client) -> SageMakerEndpointDeployOperator:
    spec = EndpointSpec(
        endpoint_name="ep-1", model_artifact="s3://bucket-1/m.tar.gz", role_arn=ROLE_ARN, image_uri="image:1"
    )
    operator = SageMakerEndpointDeployOperator(task_id="deploy", spec=spec)
    operator.__dict__["hook"] = type("Hook", (), {"conn": client})()  # the cached hook, with a stubbed client
    return operator


@pytest.fixture
def sagemaker():
    client = boto3.client("sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "status"), [("ThrottlingException", 400), ("AccessDeniedException", 400), ("InternalFailure", 500)]
)
def test_a_throttled_or_denied_describe_never_leads_to_a_create(sagemaker, code, status):
    client, stubber = sagemaker
    stubber.add_client_error(
        "describe_model", service_error_code=code, http_status_code=status, service_message="Rate exceeded"
    )
    with pytest.raises(ClientError, match=code):
        operator_with(client)._ensure_model("m-1")  # no create_model was stubbed: a create would fail the stub


def test_a_missing_model_and_config_are_created_once(sagemaker):
    client, stubber = sagemaker
    stubber.add_client_error(
        "describe_model", service_error_code="ValidationException", service_message="Could not find model"
    )
    stubber.add_response("create_model", {"ModelArn": "arn:aws:sagemaker:us-east-1:123456789012:model/m-1"})
    stubber.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": "c-1",
            "EndpointConfigArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint-config/c-1",
            "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": "m-1"}],
            "CreationTime": "2026-12-07T00:00:00Z",
        },
    )
    operator = operator_with(client)
    operator._ensure_model("m-1")
    operator._ensure_config("c-1", "m-1")  # it exists: nothing is created


@pytest.mark.parametrize(("status", "waits"), [("Updating", True), ("InService", False)])
def test_an_update_refused_while_another_change_runs_waits_only_if_the_endpoint_is_busy(sagemaker, status, waits):
    """The refusal's words are not an API: the endpoint's own status decides (any wording of the message)."""
    client, stubber = sagemaker
    stubber.add_client_error(
        "update_endpoint", service_error_code="ValidationException", service_message="some wording SageMaker may change"
    )
    stubber.add_response(
        "describe_endpoint",
        {
            "EndpointName": "ep-1",
            "EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/ep-1",
            "EndpointConfigName": "c-0",
            "EndpointStatus": status,
            "CreationTime": "2026-12-07T00:00:00Z",
            "LastModifiedTime": "2026-12-07T00:00:00Z",
        },
    )
    operator = operator_with(client)
    if waits:
        assert operator._update("c-0", "c-1").recheck
    else:
        with pytest.raises(ClientError):
            operator._update("c-0", "c-1")


def test_describe_or_none_decides_from_the_code():
    from mlscale.aws import errors

    def raising(code):
        def describe(**_):
            raise ClientError({"Error": {"Code": code, "Message": "Could not find it (or not)"}}, "Describe")

        return describe

    assert errors.describe_or_none(raising("ValidationException")) is None
    assert errors.describe_or_none(raising("ResourceNotFound")) is None
    for code in ("ThrottlingException", "TooManyRequestsException", "AccessDenied", "RequestLimitExceeded"):
        with pytest.raises(ClientError):
            errors.describe_or_none(raising(code))
