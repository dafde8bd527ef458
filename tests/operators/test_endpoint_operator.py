"""SageMakerEndpointDeployOperator against the emulator: create, update, a failed update, autoscaling."""

from __future__ import annotations

import io
import json

import pytest
import torch
from airflow.sdk.exceptions import AirflowException

from mlscale.operators import SageMakerEndpointDeployOperator
from mlscale.specs import EndpointSpec, SpecError
from tests.conftest import ROLE_ARN, model_tar
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator


def artifact(clients, name: str, scale: float | None) -> str:
    files = {}
    if scale is not None:
        layer = torch.nn.Linear(2, 1, bias=False)
        layer.weight.data = torch.tensor([[scale, scale]])
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.script(layer), buffer)
        files["model.pt"] = buffer.getvalue()
    else:  # no model at all: the server cannot load it
        files["README"] = b"empty"
    clients["s3"].put_object(Bucket="mlscale-test", Key=f"endpoint/{name}.tar.gz", Body=model_tar(files))
    return f"s3://mlscale-test/endpoint/{name}.tar.gz"


def deploy(uri: str, **overrides) -> dict:
    overrides.setdefault("endpoint_name", "op-endpoint")
    spec = EndpointSpec(
        model_artifact=uri, role_arn=ROLE_ARN, image_uri="inference:1", sample_body="[[1, 2]]", **overrides
    )
    return SageMakerEndpointDeployOperator(task_id="deploy", spec=spec, poll_interval=0.2, deferrable=False).execute(
        {"ti": FakeTI("deploy")}
    )


def test_create_then_update_then_a_failed_update_keeps_the_old_model_serving(emulator, clients):
    first = deploy(artifact(clients, "v1", 1.0))
    assert json.loads(first["sample_answer"]) == [[3.0]]
    scaling = __import__("boto3").client(
        "application-autoscaling", endpoint_url=emulator.endpoint_url, region_name="us-east-1"
    )
    targets = scaling.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
    assert any(t["ResourceId"] == "endpoint/op-endpoint/variant/AllTraffic" and t["MinCapacity"] == 1 for t in targets)
    policies = scaling.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]
    tracking = policies[0]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == "SageMakerVariantInvocationsPerInstance"
    assert tracking["TargetValue"] == 70.0

    second = deploy(artifact(clients, "v2", 10.0), traffic_routing="CANARY", canary_percent=50, wait_seconds=1)
    assert second["endpoint_config"] != first["endpoint_config"] and json.loads(second["sample_answer"]) == [[30.0]]

    with pytest.raises(AirflowException, match="still serves .* the update failed or rolled back"):
        deploy(artifact(clients, "broken", None))
    runtime = __import__("boto3").client(
        "sagemaker-runtime", endpoint_url=emulator.endpoint_url, region_name="us-east-1"
    )
    answer = runtime.invoke_endpoint(EndpointName="op-endpoint", Body="[[1, 2]]", ContentType="application/json")
    assert json.loads(answer["Body"].read()) == [[30.0]]  # v2 still answers


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"min_capacity": 0}, "min_capacity: must be an integer from 1 to 100"),
        ({"max_capacity": 0}, "max_capacity: must be an integer from 1 to 1000"),
        ({"endpoint_name": "bad_name"}, "endpoint_name: must be 1-63 letters"),
        ({"instance_type": "c5.large"}, "instance_type: must look like ml.<family>.<size>"),
        ({"traffic_routing": "SHADOW"}, "traffic_routing: must be ALL_AT_ONCE, CANARY or LINEAR"),
        ({"canary_percent": 60}, "canary_percent: must be an integer from 1 to 50"),
        ({"wait_seconds": 4000}, "wait_seconds: must be an integer from 0 to 3600"),
        ({"model_version": "2026-10-18;v2"}, "model_version: must be at most 256 letters"),
        ({"model_version": "x" * 257}, "model_version: must be at most 256 letters"),
    ],
)
def test_bad_endpoint_specs(overrides, message):
    spec = EndpointSpec(endpoint_name="e", model_artifact="s3://bkt/m.tar.gz", role_arn=ROLE_ARN, image_uri="i")
    for key, value in overrides.items():
        setattr(spec, key, value)
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)").replace("<", "<")):
        spec.validate()


def test_deployment_config_is_what_the_api_takes():
    import botocore.session
    from botocore.validate import ParamValidator

    spec = EndpointSpec(
        endpoint_name="e",
        model_artifact="s3://bkt/m.tar.gz",
        role_arn=ROLE_ARN,
        image_uri="i",
        traffic_routing="LINEAR",
        linear_step_percent=20,
        wait_seconds=60,
        rollback_alarms=["5xx"],
    )
    shape = botocore.session.get_session().get_service_model("sagemaker").operation_model("UpdateEndpoint").input_shape
    request = {"EndpointName": "e", "EndpointConfigName": "c", "DeploymentConfig": spec.deployment_config()}
    assert not ParamValidator().validate(request, shape).has_errors()
    assert spec.deployment_config()["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]["LinearStepSize"] == {
        "Type": "CAPACITY_PERCENT",
        "Value": 20,
    }


def test_two_runs_deploying_at_once_end_on_the_newer_model(emulator, clients):
    """Whichever starts first, the endpoint ends on the newer model_version; the older deploy is skipped."""
    import threading

    from airflow.sdk.exceptions import AirflowSkipException

    older, newer = artifact(clients, "race-old", 2.0), artifact(clients, "race-new", 20.0)
    outcomes: dict[str, object] = {}

    def run(label, uri, version):
        try:
            outcomes[label] = deploy(uri, endpoint_name="op-race", model_version=version, wait_seconds=1)
        except AirflowSkipException as skipped:
            outcomes[label] = skipped

    deploy(artifact(clients, "race-first", 1.0), endpoint_name="op-race", model_version="2026-10-01")
    runs = [
        threading.Thread(target=run, args=("older", older, "2026-10-11")),
        threading.Thread(target=run, args=("newer", newer, "2026-10-18")),
    ]
    for thread in runs:
        thread.start()
    for thread in runs:
        thread.join(timeout=240)
    assert json.loads(outcomes["newer"]["sample_answer"]) == [[60.0]]
    runtime = __import__("boto3").client(
        "sagemaker-runtime", endpoint_url=emulator.endpoint_url, region_name="us-east-1"
    )
    answer = runtime.invoke_endpoint(EndpointName="op-race", Body="[[1, 2]]", ContentType="application/json")
    assert json.loads(answer["Body"].read()) == [[60.0]]
    # the older one either went first and was then replaced, or found the newer one and skipped
    assert isinstance(outcomes["older"], (dict, AirflowSkipException)), outcomes["older"]
    if isinstance(outcomes["older"], AirflowSkipException):
        assert "Superseded" in str(outcomes["older"]) and "2026-10-18" in str(outcomes["older"])
    # and afterwards the older model is never deployed over the newer one
    with pytest.raises(AirflowSkipException, match="newer than this run's 2026-10-11"):
        deploy(older, endpoint_name="op-race", model_version="2026-10-11")
