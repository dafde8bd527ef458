"""The stage sensors against the emulator: deferrable, poke, reschedule, timeout, soft_fail, and submit + sense."""

from __future__ import annotations

import time

import pytest
from airflow.sdk.exceptions import (
    AirflowException,
    AirflowRescheduleException,
    AirflowSensorTimeout,
    AirflowSkipException,
    TaskDeferred,
)

from mlscale.sensors import FSxFileSystemSensor, GreengrassDeploymentSensor, TrainingJobSensor
from mlscale.triggers.stage import StageTrigger
from tests.conftest import first_event
from tests.operators.test_training_operator import FakeTI, make_operator
from tests.triggers.test_stage_trigger import QUICK, SLEEPER, start_job

pytestmark = [pytest.mark.emulator, pytest.mark.usefixtures("no_trigger_hold")]


class RescheduledTI(FakeTI):
    def get_first_reschedule_date(self, context):
        return None


def context(task_id: str = "sense") -> dict:
    return {"ti": RescheduledTI(task_id)}


def test_submit_then_sense_two_tasks(emulator, clients, tmp_path, capfd):
    """wait_for_completion=False ends the stage at the create; the sensor waits and returns the result."""
    operator, ctx = make_operator(
        tmp_path, QUICK.replace("step=1 loss=0.5", "accuracy=0.97"), "submitonly", wait_for_completion=False
    )
    submitted = operator.execute(ctx)
    assert submitted["status"] == "InProgress" and submitted["job_name"].startswith("operator-tests-submitonly")
    sensor = TrainingJobSensor(
        task_id="sense", job_name=submitted["job_name"], mode="poke", poke_interval=0.3, deferrable=False
    )
    result = sensor.execute(context())
    assert result["status"] == "Completed" and result["final_metrics"] == {"accuracy": 0.97}
    assert result["model_artifact"].endswith(f"/{submitted['job_name']}/output/model.tar.gz")
    assert "[algo-1] accuracy=0.97" in capfd.readouterr().out  # the job's log, in the sensor's task log


def test_deferrable_by_default_over_the_stage_trigger(emulator, clients):
    start_job(clients, "sensor-deferred", QUICK)
    sensor = TrainingJobSensor(task_id="sense", job_name="sensor-deferred", poke_interval=0.3, timeout=600)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context())
    trigger = deferred.value.trigger
    assert isinstance(trigger, StageTrigger) and trigger.kind == "training" and trigger.stop_on_kill is False
    assert trigger.next_poll_at is None  # a sensor has seen nothing yet: its first Describe is at once
    assert deferred.value.timeout.total_seconds() == 600
    event = first_event(trigger)
    assert sensor.execute_complete(context(), event)["status"] == "Completed"


def test_reschedule_mode_frees_the_slot_while_the_job_runs(emulator, clients):
    start_job(clients, "sensor-rescheduled", SLEEPER)
    sensor = TrainingJobSensor(
        task_id="sense", job_name="sensor-rescheduled", mode="reschedule", poke_interval=5, deferrable=False
    )
    with pytest.raises(AirflowRescheduleException):
        sensor.execute(context())
    clients["sagemaker"].stop_training_job(TrainingJobName="sensor-rescheduled")


def test_a_failed_job_fails_the_sensor_with_the_reason_or_skips_it_with_soft_fail(emulator, clients):
    start_job(clients, "sensor-fails", "raise SystemExit('disk full')\n")
    poke = dict(task_id="sense", job_name="sensor-fails", mode="poke", poke_interval=0.3, deferrable=False)
    with pytest.raises(AirflowException, match="(?s)Training job sensor-fails failed: .*disk full"):
        TrainingJobSensor(**poke).execute(context())
    with pytest.raises(AirflowSkipException):
        TrainingJobSensor(**poke, soft_fail=True).execute(context())
    # deferred: the trigger's failed event takes the same way out
    sensor = TrainingJobSensor(task_id="sense", job_name="sensor-fails", soft_fail=True)
    event = first_event(StageTrigger("training", "sensor-fails", poll_interval=0.3))
    with pytest.raises(AirflowSkipException):
        sensor.resume_execution("execute_complete", {"event": event}, context())


def test_timeout(emulator, clients):
    start_job(clients, "sensor-timeout", SLEEPER)
    started = time.monotonic()
    with pytest.raises(AirflowSensorTimeout):
        TrainingJobSensor(
            task_id="sense", job_name="sensor-timeout", mode="poke", poke_interval=0.3, timeout=1, deferrable=False
        ).execute(context())
    assert time.monotonic() - started < 30
    clients["sagemaker"].stop_training_job(TrainingJobName="sensor-timeout")


def test_fsx_and_greengrass_sensors_name_their_resources(emulator):
    import boto3

    fsx = boto3.client("fsx", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    fs = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": "SCRATCH_2"},
    )["FileSystem"]
    result = FSxFileSystemSensor(
        task_id="sense", file_system_id=fs["FileSystemId"], mode="poke", poke_interval=0.2, deferrable=False
    ).execute(context())
    assert result["lifecycle"] == "AVAILABLE" and result["mount_name"]
    fsx.delete_file_system(FileSystemId=fs["FileSystemId"])
    device = GreengrassDeploymentSensor(task_id="sense", deployment_id="d-1", thing_name="thing-1")
    assert device.kind.name == "greengrass_device" and device.resource_id == "thing-1/d-1"
    assert GreengrassDeploymentSensor(task_id="sense", deployment_id="d-1").kind.name == "greengrass_deployment"


def test_a_sensor_maps_over_many_resources_by_its_id_field():
    """`.partial(...).expand(job_id=...)`: Airflow maps only parameters it can see in the class's signature."""
    import pendulum
    from airflow.sdk import DAG

    from mlscale.sensors import BatchJobSensor, TrainingJobSensor

    with DAG("mapped_sensors", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None) as dag:
        BatchJobSensor.partial(task_id="batch", deferrable=True, poke_interval=10).expand(job_id=["a", "b"])
        TrainingJobSensor.partial(task_id="training").expand(job_name=["x", "y"])
    assert dag.task_dict["batch"].expand_input.value == {"job_id": ["a", "b"]}
    with pytest.raises(TypeError, match="unexpected keyword argument 'job_name'"):
        BatchJobSensor.partial(task_id="wrong", dag=dag).expand(job_name=["x"])
    with pytest.raises(TypeError, match="missing keyword argument 'job_id'"):
        BatchJobSensor(task_id="no_id")
