"""Greengrass v2 on the emulator: components, deployments, simulated core devices, ROLLBACK and abort."""

from __future__ import annotations

import io
import json
import time
import zipfile

import boto3
import pytest
import torch
from botocore.exceptions import ClientError

from mlscale_emulator import control
from tests.conftest import REPO, model_tar, traced_model

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def fleet(emulator, clients):
    model = traced_model(torch.nn.Linear(64, 10), torch.rand(1, 64))
    clients["s3"].put_object(Bucket="mlscale-test", Key="gg/model-ml_c5.tar.gz", Body=model_tar({"model.pt": model}))
    app = io.BytesIO()
    with zipfile.ZipFile(app, "w") as archive:
        archive.write(REPO / "include" / "edge" / "inference_app.py", "inference_app.py")
    clients["s3"].put_object(Bucket="mlscale-test", Key="gg/app.zip", Body=app.getvalue())
    control.provision_edge_fleet(emulator, group="gg-fleet", count=2)
    control.provision_edge_fleet(emulator, group="gg-mixed", count=2)
    control.provision_edge_fleet(emulator, group="gg-mixed-arm", count=1, architecture="armv7l")
    iot = boto3.client("iot", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    iot.add_thing_to_thing_group(thingGroupName="gg-mixed", thingName="gg-mixed-arm-device-1")
    return boto3.client("greengrassv2", endpoint_url=emulator.endpoint_url, region_name="us-east-1"), iot


def recipe(version: str, run: str | None = None) -> bytes:
    run = run or (
        "python3 {artifacts:decompressedPath}/app/inference_app.py --model {artifacts:path}/model-ml_c5.tar.gz "
        "--sample '{configuration:/sample}'"
    )
    return json.dumps(
        {
            "RecipeFormatVersion": "2020-01-25",
            "ComponentName": "com.test.Digits",
            "ComponentVersion": version,
            "ComponentConfiguration": {"DefaultConfiguration": {"sample": [[0.5] * 64]}},
            "Manifests": [
                {
                    "Platform": {"os": "linux", "architecture": "/amd64|aarch64/"},
                    "Artifacts": [
                        {"URI": "s3://mlscale-test/gg/model-ml_c5.tar.gz"},
                        {"URI": "s3://mlscale-test/gg/app.zip", "Unarchive": "ZIP"},
                    ],
                    "Lifecycle": {"Run": run},
                }
            ],
        }
    ).encode()


def deploy(gg, iot, group, version, token=None, **extra):
    arn = iot.describe_thing_group(thingGroupName=group)["thingGroupArn"]
    kwargs = {"clientToken": token} if token else {}
    deployment = gg.create_deployment(
        targetArn=arn,
        deploymentName=f"{group}-{version}",
        components={"com.test.Digits": {"componentVersion": version}},
        **kwargs,
        **extra,
    )
    for _ in range(300):
        status = gg.get_deployment(deploymentId=deployment["deploymentId"])["deploymentStatus"]
        if status != "ACTIVE":
            return deployment["deploymentId"], status
        time.sleep(0.2)
    raise TimeoutError(deployment)


def device_status(gg, thing, deployment_id):
    entries = gg.list_effective_deployments(coreDeviceThingName=thing)["effectiveDeployments"]
    return next(e for e in entries if e["deploymentId"] == deployment_id)


def test_component_versions_are_validated(fleet):
    gg, _ = fleet
    assert gg.create_component_version(inlineRecipe=recipe("1.0.0"))["status"]["componentState"] == "DEPLOYABLE"
    with pytest.raises(ClientError, match="already exists"):
        gg.create_component_version(inlineRecipe=recipe("1.0.0"))
    with pytest.raises(ClientError, match="not semantic versioning"):
        gg.create_component_version(inlineRecipe=recipe("1.0"))
    with pytest.raises(ClientError, match="not semantic versioning"):  # the version names a device folder
        gg.create_component_version(inlineRecipe=recipe("1.0.1\n"))
    missing = json.loads(recipe("9.9.9"))
    missing["Manifests"][0]["Artifacts"][0]["URI"] = "s3://mlscale-test/gg/missing.tar.gz"
    status = gg.create_component_version(inlineRecipe=json.dumps(missing).encode())["status"]
    assert status["componentState"] == "FAILED" and "s3://mlscale-test/gg/missing.tar.gz" in status["errors"]


def test_every_device_installs_runs_and_answers(fleet, clients):
    gg, iot = fleet
    deployment_id, status = deploy(gg, iot, "gg-fleet", "1.0.0", token="first")
    assert status == "COMPLETED"
    for thing in ("gg-fleet-device-1", "gg-fleet-device-2"):
        assert device_status(gg, thing, deployment_id)["coreDeviceExecutionStatus"] == "SUCCEEDED"
        events = clients["logs"].filter_log_events(
            logGroupName="/aws/greengrass/UserComponent/us-east-1/com.test.Digits", logStreamNames=[thing]
        )["events"]
        assert any(f"thing={thing} answer=" in e["message"] for e in events)
    again = gg.create_deployment(
        targetArn=iot.describe_thing_group(thingGroupName="gg-fleet")["thingGroupArn"],
        components={"com.test.Digits": {"componentVersion": "1.0.0"}},
        clientToken="first",
    )
    assert again["deploymentId"] == deployment_id  # idempotent on the client token


def test_a_device_that_cannot_run_it_fails_and_rolls_back(fleet):
    gg, iot = fleet
    deployment_id, status = deploy(gg, iot, "gg-mixed", "1.0.0")
    assert status == "COMPLETED"
    arm = device_status(gg, "gg-mixed-arm-device-1", deployment_id)
    assert arm["coreDeviceExecutionStatus"] == "FAILED"
    assert "no manifest of com.test.Digits matches platform os=linux architecture=armv7l" in arm["reason"]
    assert "rolled back" in arm["reason"]
    assert device_status(gg, "gg-mixed-device-1", deployment_id)["coreDeviceExecutionStatus"] == "SUCCEEDED"


def test_abort_criteria_cancel_the_rest_of_the_fleet(fleet):
    gg, iot = fleet
    gg.create_component_version(inlineRecipe=recipe("2.0.0", run="exit 3"))
    # two devices a minute: the first fails before the second is reached
    abort = {
        "abortConfig": {
            "criteriaList": [
                {"failureType": "FAILED", "action": "CANCEL", "thresholdPercentage": 50, "minNumberOfExecutedThings": 1}
            ]
        },
        "jobExecutionsRolloutConfig": {"maximumPerMinute": 2},
    }
    deployment_id, status = deploy(gg, iot, "gg-fleet", "2.0.0", iotJobConfiguration=abort)
    assert status == "CANCELED"
    statuses = sorted(
        device_status(gg, t, deployment_id)["coreDeviceExecutionStatus"]
        for t in ("gg-fleet-device-1", "gg-fleet-device-2")
    )
    assert statuses == ["CANCELED", "FAILED"]


def test_a_fleet_installs_at_once_at_the_default_rollout_rate(fleet, tmp_path):
    """IoT jobs reach up to 1,000 devices a minute when no rate is set: both devices install at the same time."""
    gg, iot = fleet
    go = tmp_path / "go"
    gg.create_component_version(inlineRecipe=recipe("3.0.0", run=f"while [ ! -e {go} ]; do sleep 0.05; done"))
    arn = iot.describe_thing_group(thingGroupName="gg-fleet")["thingGroupArn"]
    deployment_id = gg.create_deployment(
        targetArn=arn, deploymentName="gg-fleet-3.0.0", components={"com.test.Digits": {"componentVersion": "3.0.0"}}
    )["deploymentId"]
    things = ("gg-fleet-device-1", "gg-fleet-device-2")

    def installing(thing):
        entries = gg.list_effective_deployments(coreDeviceThingName=thing)["effectiveDeployments"]
        return any(
            e["deploymentId"] == deployment_id and e["coreDeviceExecutionStatus"] == "IN_PROGRESS" for e in entries
        )

    for _ in range(300):  # each device's Run waits for the file: both installing means they run at once
        if all(installing(t) for t in things):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the devices never installed at the same time")
    go.touch()
    for _ in range(300):
        if gg.get_deployment(deploymentId=deployment_id)["deploymentStatus"] != "ACTIVE":
            break
        time.sleep(0.1)
    assert gg.get_deployment(deploymentId=deployment_id)["deploymentStatus"] == "COMPLETED"
    assert {device_status(gg, t, deployment_id)["coreDeviceExecutionStatus"] for t in things} == {"SUCCEEDED"}
