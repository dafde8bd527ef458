"""FSxLustreStageOperator and the teardown against the emulator."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowSkipException, TaskDeferred

from mlscale.operators import FSxDeleteFileSystemOperator, FSxLustreStageOperator
from mlscale.specs import FSxLustreSpec, SpecError
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator


OPERATOR_ARGS = ("enabled", "skip_reason", "deferrable", "poll_interval", "wait_for_completion")


def stage_operator(**overrides) -> FSxLustreStageOperator:
    spec = dict(
        data_repository_path="s3://mlscale-test/fsx-op/",
        subnet_id="subnet-0123456789abcdef0",
        security_group_ids=["sg-0123456789abcdef0"],
        file_system_path="/shards",
    )
    kwargs = dict(task_id="stage_fsx", poll_interval=0.2, deferrable=False)
    for key, value in overrides.items():
        (kwargs if key in OPERATOR_ARGS else spec)[key] = value
    return FSxLustreStageOperator(spec=FSxLustreSpec(**spec), **kwargs)


def test_stages_and_a_retry_reuses_the_same_file_system(emulator, clients):
    for i in range(2):
        clients["s3"].put_object(Bucket="mlscale-test", Key=f"fsx-op/shard-{i}.rec", Body=b"\0" * 64)
    context = {"ti": FakeTI("stage_fsx", run_id="manual__fsx-1")}
    first = stage_operator().execute(context)
    assert first["files_imported"] == 2 and first["directory_path"] == f"/{first['mount_name']}/shards"
    again = stage_operator().execute(context)
    assert again["file_system_id"] == first["file_system_id"] and again["import_task_id"] == first["import_task_id"]
    FSxDeleteFileSystemOperator(task_id="delete_fsx", file_system_id=first["file_system_id"]).execute(context)
    import boto3

    fsx = boto3.client("fsx", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    assert first["file_system_id"] not in [f["FileSystemId"] for f in fsx.describe_file_systems()["FileSystems"]]


def test_deferrable_waits_in_a_trigger(emulator, clients):
    with pytest.raises(TaskDeferred) as deferred:
        stage_operator(deferrable=True).execute({"ti": FakeTI("stage_fsx", run_id="manual__fsx-2")})
    assert deferred.value.trigger.kind == "fsx_file_system" and deferred.value.method_name == "execute_complete"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"storage_capacity_gib": 1000}, "storage_capacity_gib: must be 1200 or a multiple of 2400"),
        ({"deployment_type": "SCRATCH_1"}, "deployment_type: must be SCRATCH_2, PERSISTENT_1 or PERSISTENT_2"),
        ({"deployment_type": "PERSISTENT_2"}, "per_unit_storage_throughput: must be one of (125, 250, 500, 1000)"),
        ({"data_repository_path": "/local"}, "data_repository_path: must be an s3://bucket/prefix URI"),
        ({"subnet_id": ""}, "subnet_id: is required"),
    ],
)
def test_bad_stage_inputs_fail_before_any_aws_call(emulator, overrides, message):
    with pytest.raises(SpecError) as error:
        stage_operator(**overrides).execute({"ti": FakeTI("stage_fsx", run_id="manual__fsx-bad")})
    assert message in str(error.value)


def test_disabled_stage_returns_nothing_and_the_teardown_skips(emulator):
    context = {"ti": FakeTI("stage_fsx", run_id="manual__fsx-3")}
    assert (
        stage_operator(enabled=False, skip_reason="the advisor chose S3 File").execute(context)["file_system_id"]
        is None
    )
    with pytest.raises(AirflowSkipException, match="no file system was staged"):
        FSxDeleteFileSystemOperator(task_id="delete_fsx", file_system_id="None").execute(context)
