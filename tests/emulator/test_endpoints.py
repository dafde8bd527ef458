"""Endpoints on the emulator: real answers, and blue/green updates with zero failed invocations."""

from __future__ import annotations

import io
import json
import threading
import time

import boto3
import pytest
import torch
from botocore.exceptions import ClientError

from tests.conftest import model_tar

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def endpoint_api(emulator, clients):
    sm = clients["sagemaker"]
    for name, scale in (("bg-v1", 1.0), ("bg-v2", 10.0), ("bg-v3", 100.0)):
        layer = torch.nn.Linear(2, 1, bias=False)
        layer.weight.data = torch.tensor([[scale, scale]])
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.script(layer), buffer)
        clients["s3"].put_object(
            Bucket="mlscale-test", Key=f"bg/{name}.tar.gz", Body=model_tar({"model.pt": buffer.getvalue()})
        )
        sm.create_model(
            ModelName=name,
            ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
            PrimaryContainer={"Image": "i", "ModelDataUrl": f"s3://mlscale-test/bg/{name}.tar.gz"},
        )
        sm.create_endpoint_config(
            EndpointConfigName=f"cfg-{name}",
            ProductionVariants=[
                {
                    "VariantName": "AllTraffic",
                    "ModelName": name,
                    "InitialInstanceCount": 2,
                    "InstanceType": "ml.m5.large",
                    "InitialVariantWeight": 1.0,
                }
            ],
        )
    make = lambda service: boto3.client(service, endpoint_url=emulator.endpoint_url, region_name="us-east-1")  # noqa: E731
    return sm, make


def wait_while(sm, name, status):
    for _ in range(600):
        described = sm.describe_endpoint(EndpointName=name)
        if described["EndpointStatus"] != status:
            return described
        time.sleep(0.2)
    raise TimeoutError(name)


class Client(threading.Thread):
    """Invokes the endpoint in a loop and counts what comes back."""

    def __init__(self, make, name):
        super().__init__(daemon=True)
        self.runtime, self.name = make("sagemaker-runtime"), name
        self.ok, self.failed, self.answers, self.stopped = 0, [], set(), threading.Event()

    def run(self):
        while not self.stopped.is_set():
            try:
                body = self.runtime.invoke_endpoint(
                    EndpointName=self.name, Body="[[1,2]]", ContentType="application/json"
                )
                self.answers.add(json.loads(body["Body"].read())[0][0])
                self.ok += 1
            except ClientError as error:
                self.failed.append(str(error))

    def answered(self, more: int, timeout: float = 60) -> None:
        """Wait until `more` further invocations have succeeded."""
        target, deadline = self.ok + more, time.monotonic() + timeout
        while self.ok < target:
            assert time.monotonic() < deadline and self.is_alive(), f"{self.ok} of {target} answers"
            time.sleep(0.05)

    def finish(self):
        self.stopped.set()
        self.join()


DEPLOYMENT = {
    "BlueGreenUpdatePolicy": {
        "TrafficRoutingConfiguration": {
            "Type": "CANARY",
            "WaitIntervalInSeconds": 2,
            "CanarySize": {"Type": "CAPACITY_PERCENT", "Value": 50},
        },
        "TerminationWaitInSeconds": 1,
    },
    "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": "bg-errors"}]},
}


def test_blue_green_update_and_rollback_without_a_failed_invocation(endpoint_api):
    sm, make = endpoint_api
    cloudwatch = make("cloudwatch")
    cloudwatch.put_metric_alarm(
        AlarmName="bg-errors",
        MetricName="Invocation5XXErrors",
        Namespace="AWS/SageMaker",
        Statistic="Sum",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanThreshold",
    )
    sm.create_endpoint(EndpointName="bg", EndpointConfigName="cfg-bg-v1")
    assert wait_while(sm, "bg", "Creating")["EndpointStatus"] == "InService"
    client = Client(make, "bg")
    client.start()

    sm.update_endpoint(EndpointName="bg", EndpointConfigName="cfg-bg-v2", DeploymentConfig=DEPLOYMENT)
    updated = wait_while(sm, "bg", "Updating")
    assert updated["EndpointConfigName"] == "cfg-bg-v2" and "FailureReason" not in updated
    assert client.answers >= {3.0, 30.0}  # the canary served both for a while
    client.answers.clear()

    linear = {
        **DEPLOYMENT,
        "BlueGreenUpdatePolicy": {
            **DEPLOYMENT["BlueGreenUpdatePolicy"],
            "TrafficRoutingConfiguration": {
                "Type": "LINEAR",
                "WaitIntervalInSeconds": 3,
                "LinearStepSize": {"Type": "CAPACITY_PERCENT", "Value": 50},
            },
        },
    }
    sm.update_endpoint(EndpointName="bg", EndpointConfigName="cfg-bg-v3", DeploymentConfig=linear)
    deadline = time.monotonic() + 60
    while 300.0 not in client.answers:  # green is taking its first step of traffic
        assert time.monotonic() < deadline
        time.sleep(0.1)
    cloudwatch.set_alarm_state(AlarmName="bg-errors", StateValue="ALARM", StateReason="test: errors while baking")
    rolled_back = wait_while(sm, "bg", "Updating")
    client.answered(2)  # what was in flight during the rollback has come back
    client.answers.clear()
    client.answered(20)
    client.finish()

    assert rolled_back["EndpointStatus"] == "InService"  # a rolled-back update still ends InService...
    assert rolled_back["EndpointConfigName"] == "cfg-bg-v2"  # ...serving the old config
    assert "alarm bg-errors went into ALARM" in rolled_back["FailureReason"]
    assert client.answers == {30.0}  # and the old model answers
    assert client.failed == [] and client.ok > 50


def test_unknown_endpoint_and_model_errors(endpoint_api):
    sm, make = endpoint_api
    runtime = make("sagemaker-runtime")
    with pytest.raises(ClientError, match="Endpoint no-such-endpoint of account 123456789012 not found"):
        runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body="[[1,2]]", ContentType="application/json")
    sm.create_endpoint(EndpointName="errors", EndpointConfigName="cfg-bg-v1")
    wait_while(sm, "errors", "Creating")
    with pytest.raises(ClientError) as error:
        runtime.invoke_endpoint(EndpointName="errors", Body="<x/>", ContentType="application/xml")
    assert error.value.response["Error"]["Code"] == "ModelError"
    assert "Received client error (415)" in str(error.value)
    sm.delete_endpoint(EndpointName="errors")
    with pytest.raises(ClientError, match="not found"):
        runtime.invoke_endpoint(EndpointName="errors", Body="[[1,2]]", ContentType="application/json")
