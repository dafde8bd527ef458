"""GreengrassEdgeDeployOperator against the emulator: build the component, deploy, every device answers."""

from __future__ import annotations

import io
import json

import pytest
import torch
from airflow.sdk.exceptions import AirflowException

from mlscale.operators import GreengrassEdgeDeployOperator
from mlscale.specs import EdgeDeploymentSpec, SpecError
from mlscale_emulator import control
from tests.conftest import REPO, model_tar, traced_model
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def compiled(emulator, clients):
    model = traced_model(torch.nn.Linear(64, 10), torch.rand(1, 64))
    clients["s3"].put_object(
        Bucket="mlscale-test", Key="edge-op/model-ml_c5.tar.gz", Body=model_tar({"model.pt": model})
    )
    control.provision_edge_fleet(emulator, group="op-fleet", count=2)
    control.provision_edge_fleet(emulator, group="op-arm", count=1, architecture="armv7l")
    return "s3://mlscale-test/edge-op/model-ml_c5.tar.gz"


def operator(artifact: str, group: str, **overrides) -> GreengrassEdgeDeployOperator:
    spec = dict(
        component_name="com.mlscale.Test",
        compiled_artifact=artifact,
        app_source=str(REPO / "include" / "edge" / "inference_app.py"),
        artifact_prefix="s3://mlscale-test/edge-op/components/",
        thing_group_name=group,
        sample=json.dumps([[0.2] * 64]),
    )
    kwargs = dict(task_id="deploy_edge", poll_interval=0.2, deferrable=False)
    for key, value in overrides.items():
        (kwargs if key in ("deferrable", "wait_for_completion", "poll_interval") else spec)[key] = value
    return GreengrassEdgeDeployOperator(spec=EdgeDeploymentSpec(**spec), **kwargs)


def test_deploys_to_every_device_and_a_retry_deploys_nothing_new(compiled, clients):
    context = {"ti": FakeTI("deploy_edge", run_id="manual__edge-1")}
    first = operator(compiled, "op-fleet").execute(context)
    assert first["status"] == "COMPLETED"
    assert set(first["devices"]) == {"op-fleet-device-1", "op-fleet-device-2"}
    expected = int(torch.jit.load(io.BytesIO(_model_bytes(clients["s3"], compiled)))(torch.full((1, 64), 0.2)).argmax())
    assert all(d["status"] == "SUCCEEDED" and d["answer"] == str(expected) for d in first["devices"].values())
    again = operator(compiled, "op-fleet").execute(context)
    assert again["deployment_id"] == first["deployment_id"]

    # another run of the same model: a deployment of its own, which the devices complete without running the
    # component again (the nucleus restarts only components whose version or configuration changed)
    def lines() -> int:
        return len(
            clients["logs"].get_log_events(
                logGroupName="/aws/greengrass/UserComponent/us-east-1/com.mlscale.Test",
                logStreamName="op-fleet-device-1",
                startFromHead=True,
            )["events"]
        )

    before = lines()
    other = operator(compiled, "op-fleet").execute({"ti": FakeTI("deploy_edge", run_id="manual__edge-1b")})
    assert other["deployment_id"] != first["deployment_id"] and other["status"] == "COMPLETED"
    assert {t: d["answer"] for t, d in other["devices"].items()} == {
        t: d["answer"] for t, d in first["devices"].items()
    }
    assert lines() == before


def test_a_failing_device_fails_the_task_with_its_reason(compiled):
    with pytest.raises(AirflowException, match="op-arm-device-1.*no manifest of com.mlscale.Test matches"):
        operator(compiled, "op-arm").execute({"ti": FakeTI("deploy_edge", run_id="manual__edge-2")})


def test_bad_inputs_fail_before_any_aws_call(compiled):
    with pytest.raises(SpecError, match="failure_handling: must be ROLLBACK or DO_NOTHING"):
        operator(compiled, "op-fleet", failure_handling="RETRY").execute({"ti": FakeTI("deploy_edge")})


def _model_bytes(s3, uri: str) -> bytes:
    import tarfile

    body = s3.get_object(Bucket="mlscale-test", Key=uri.split("/", 3)[3])["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        return tar.extractfile("model.pt").read()


def test_a_retry_after_a_kill_deploys_again_instead_of_reporting_the_canceled_one(compiled, clients, emulator):
    """on_kill cancels the deployment; the task's next try must not find only that canceled one."""
    import boto3
    from airflow.sdk.exceptions import TaskDeferred

    # a fleet of its own: devices already running this component would finish a new deployment at once
    control.provision_edge_fleet(emulator, group="op-kill-fleet", count=2)
    context = {"ti": FakeTI("deploy_edge", run_id="manual__edge-killed")}
    with pytest.raises(TaskDeferred) as deferred:
        operator(compiled, "op-kill-fleet", deferrable=True).execute(context)
    greengrass = boto3.client("greengrassv2", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    killed = deferred.value.trigger.resource_id
    greengrass.cancel_deployment(deploymentId=killed)  # what the trigger's on_kill calls
    retried = operator(compiled, "op-kill-fleet").execute(context)
    assert retried["deployment_id"] != killed and retried["status"] == "COMPLETED"
    assert greengrass.get_deployment(deploymentId=killed)["deploymentStatus"] == "CANCELED"


def test_two_runs_deploying_at_once_leave_every_device_on_the_newer_model(compiled, clients, emulator):
    import threading

    import boto3
    from airflow.sdk.exceptions import AirflowSkipException

    control.provision_edge_fleet(emulator, group="op-race-fleet", count=2)
    artifacts = {}
    for label, answer in (("older", 3), ("newer", 7)):
        layer = torch.nn.Linear(64, 10)
        layer.weight.data.zero_()
        layer.bias.data = torch.nn.functional.one_hot(torch.tensor(answer), 10).float()
        key = f"edge-op/race-{label}/model-ml_c5.tar.gz"
        clients["s3"].put_object(
            Bucket="mlscale-test", Key=key, Body=model_tar({"model.pt": traced_model(layer, torch.rand(1, 64))})
        )
        artifacts[label] = f"s3://mlscale-test/{key}"
    outcomes: dict[str, object] = {}

    def run(label, version):
        context = {"ti": FakeTI("deploy_edge", run_id=f"manual__race-{label}")}
        try:
            outcomes[label] = operator(artifacts[label], "op-race-fleet", model_version=version).execute(context)
        except AirflowSkipException as skipped:
            outcomes[label] = skipped

    runs = [
        threading.Thread(target=run, args=("older", "2026-10-11")),
        threading.Thread(target=run, args=("newer", "2026-10-18")),
    ]
    for thread in runs:
        thread.start()
    for thread in runs:
        thread.join(timeout=300)
    newer = outcomes["newer"]
    assert newer["status"] == "COMPLETED" and {d["answer"] for d in newer["devices"].values()} == {"7"}
    assert isinstance(outcomes["older"], (dict, AirflowSkipException)), outcomes["older"]
    greengrass = boto3.client("greengrassv2", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    for thing in ("op-race-fleet-device-1", "op-race-fleet-device-2"):
        history = greengrass.list_effective_deployments(coreDeviceThingName=thing)["effectiveDeployments"]
        last = next(e for e in history if e["coreDeviceExecutionStatus"] == "SUCCEEDED")
        assert last["deploymentId"] == newer["deployment_id"], history
    with pytest.raises(AirflowSkipException, match="newer than this run's 2026-10-11"):
        operator(artifacts["older"], "op-race-fleet", model_version="2026-10-11").execute(
            {"ti": FakeTI("deploy_edge", run_id="manual__race-late")}
        )
