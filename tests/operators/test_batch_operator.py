"""BatchMultiNodeTrainingOperator against the emulator: DDP on 2 nodes, reattach, kill, failures, deferral."""

from __future__ import annotations

import tarfile
import time
import uuid

import pytest
from airflow.sdk.exceptions import AirflowException, TaskDeferred

from mlscale.operators import BatchMultiNodeTrainingOperator
from mlscale.operators.stage import StageOperator
from mlscale.sensors import BatchJobSensor
from mlscale.specs import BatchTrainingSpec, SpecError
from mlscale.triggers.stage import StageTrigger
from tests.conftest import TRAINING_DIR, batch_cluster, first_event
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator
SLEEPER = ["python", "-c", "import time; print('node up', flush=True); time.sleep(120)"]


@pytest.fixture(scope="module")
def cluster(emulator):
    return batch_cluster(emulator.endpoint_url, f"op-batch-{uuid.uuid4().hex[:6]}", 8, ["python", "--version"])


def operator_for(cluster, task_id: str, **spec_fields) -> tuple[BatchMultiNodeTrainingOperator, dict]:
    fields = dict(job_queue=cluster["queue_name"], job_definition=cluster["name"], vcpus=1, memory_mib=1024)
    fields.update(spec_fields)
    kwargs = {k: fields.pop(k) for k in ("deferrable", "wait_for_completion") if k in fields}
    operator = BatchMultiNodeTrainingOperator(
        task_id=task_id, spec=BatchTrainingSpec(**fields), poll_interval=0.5, **kwargs
    )
    return operator, {"ti": FakeTI(task_id, run_id=f"manual__{uuid.uuid4().hex[:8]}")}


def jobs_named(cluster, name: str) -> list[dict]:
    return cluster["batch"].list_jobs(jobQueue=cluster["queue"], filters=[{"name": "JOB_NAME", "values": [name]}])[
        "jobSummaryList"
    ]


def test_trains_the_example_script_with_ddp_on_two_nodes(emulator, clients, digits_data, capfd):
    """The same include/training/train.py the SageMaker stage runs, on 2 Batch nodes: one torchrun rendezvous."""
    ddp_cluster = batch_cluster(emulator.endpoint_url, f"ddp-{uuid.uuid4().hex[:6]}", 4, ["python", "-V"])
    operator, context = operator_for(
        ddp_cluster,
        "ddp",
        entry_point="train.py",
        source_dir=str(TRAINING_DIR),
        output_path="s3://mlscale-test/batch-models",
        inputs={"train": digits_data["train"], "test": digits_data["test"]},
        hyperparameters={"epochs": 6},
        metric_definitions={"test:accuracy": r"test_accuracy=([0-9.]+)"},
        deferrable=False,
    )
    result = operator.execute(context)
    assert result["status"] == "SUCCEEDED" and result["node_count"] == 2 and result["attempts"] == 1
    assert result["final_metrics"]["test:accuracy"] >= 0.95
    assert result["model_artifact"] == f"s3://mlscale-test/batch-models/{result['job_name']}/output/model.tar.gz"
    bucket, key = result["model_artifact"][5:].split("/", 1)
    body = clients["s3"].get_object(Bucket=bucket, Key=key)["Body"]
    with tarfile.open(fileobj=body, mode="r|gz") as tar:
        assert "model.pt" in [member.name for member in tar]
    out = capfd.readouterr().out
    # both nodes' CloudWatch lines in the task log; one process group of two ranks
    assert "[node-0]" in out and "[node-1]" in out and "world_size=2" in out
    assert len(jobs_named(ddp_cluster, result["job_name"])) == 1


def test_a_killed_worker_reattaches_and_never_submits_twice(cluster, monkeypatch):
    operator, context = operator_for(cluster, "reattach", command=["python", "-c", "print('done')"], deferrable=False)

    def killed(self, wait):
        raise KeyboardInterrupt("worker killed after the job was submitted")

    monkeypatch.setattr(StageOperator, "_wait_here", killed)
    with pytest.raises(KeyboardInterrupt):
        operator.execute(context)
    monkeypatch.undo()
    result = operator.execute(context)  # the retry: waits for the same job
    assert result["status"] == "SUCCEEDED"
    assert [job["jobId"] for job in jobs_named(cluster, result["job_name"])] == [result["job_id"]]
    again = operator.execute(context)  # and once it succeeded, reuses it
    assert again["job_id"] == result["job_id"] and len(jobs_named(cluster, result["job_name"])) == 1


def test_on_kill_terminates_the_job_and_a_sensor_reports_it(cluster):
    operator, context = operator_for(cluster, "killed", command=SLEEPER, wait_for_completion=False)
    job_id = operator.execute(context)["job_id"]
    sensor = BatchJobSensor(task_id="watch", job_id=job_id, poke_interval=0.2, deferrable=False, mode="poke")
    assert sensor.poke({}) is False
    operator.on_kill()
    with pytest.raises(Exception, match="Terminated by mlscale"):
        deadline = time.monotonic() + 60
        while sensor.poke({}) is False and time.monotonic() < deadline:
            time.sleep(sensor.poke_interval)  # as the sensor's own loop waits between pokes
    job = cluster["batch"].describe_jobs(jobs=[job_id])["jobs"][0]
    assert job["status"] == "FAILED" and job["statusReason"].startswith("Terminated by mlscale")


def test_a_failed_node_fails_the_task_with_its_exit_code_and_a_retry_gets_a_new_job(cluster):
    script = (
        "import os, sys, time; node = int(os.environ['AWS_BATCH_JOB_NODE_INDEX']); "
        "sys.exit(3) if node == 1 else (time.sleep(1), sys.exit(1))"
    )
    operator, context = operator_for(cluster, "fails", command=["python", "-c", script], deferrable=False)
    with pytest.raises(AirflowException) as failure:
        operator.execute(context)
    message = str(failure.value)
    assert "Essential container in task exited" in message
    assert "node 0 (main) exited 1" in message and "node 1 exited 3" in message
    operator.spec.command = ["python", "-c", "print('fixed')"]
    result = operator.execute(context)  # the task's retry: a FAILED job is not reused; the next gets -a2
    assert result["status"] == "SUCCEEDED" and result["job_name"].endswith("-a2")


def test_deferred_the_trigger_streams_the_nodes_and_resume_returns_the_result(cluster, no_trigger_hold, capfd):
    operator, context = operator_for(cluster, "deferred", command=["python", "-c", "print('hello from a node')"])
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context)
    trigger = deferred.value.trigger
    assert isinstance(trigger, StageTrigger) and trigger.kind == "batch_job" and trigger.stop_on_kill
    event = first_event(trigger)
    assert event["status"] == "success" and event["state"] == "SUCCEEDED"
    assert "[node-1] hello from a node" in capfd.readouterr().out
    result = operator.execute_complete(context, event)
    assert result["job_id"] == trigger.resource_id and result["node_count"] == 2


BAD_SPECS = [
    ({"job_queue": "no spaces allowed"}, "job_queue"),
    ({"job_definition": None}, "job_definition"),
    ({"image": "python:3.11"}, "job_definition"),  # both a definition and an image
    ({"job_definition": "bad name!"}, "job_definition"),
    ({"command": []}, "command"),
    ({"command": ["ok"], "entry_point": "train.py", "source_dir": str(TRAINING_DIR)}, "command"),
    ({"command": [], "entry_point": "train.sh", "source_dir": str(TRAINING_DIR)}, "entry_point"),
    ({"command": [], "entry_point": "train.py", "source_dir": str(TRAINING_DIR)}, "output_path"),
    (
        {"command": [], "entry_point": "missing.py", "source_dir": str(TRAINING_DIR), "output_path": "s3://b/p"},
        "entry_point",
    ),
    ({"node_count": 0}, "node_count"),
    ({"node_count": "two"}, "node_count"),
    ({"main_node_index": 2}, "main_node_index"),
    ({"vcpus": 0}, "vcpus"),
    ({"gpus": 17}, "gpus"),
    ({"environment": {"AWS_BATCH_JOB_ID": "x"}}, "environment['AWS_BATCH_JOB_ID']"),
    ({"environment": {"1BAD": "x"}}, "environment['1BAD']"),
    ({"timeout_seconds": 30}, "timeout_seconds"),
    ({"retry_attempts": 11}, "retry_attempts"),
    ({"retry_on_exit": [{"action": "RETRY"}]}, "retry_on_exit[0]"),
    ({"retry_on_exit": [{"action": "AGAIN", "on_exit_code": "1"}]}, "retry_on_exit[0].action"),
    ({"retry_on_exit": [{"action": "RETRY", "on_exit_code": "1x"}]}, "retry_on_exit[0].on_exit_code"),
    ({"retry_on_exit": [{"action": "EXIT", "on_reason": "x"}] * 6}, "retry_on_exit"),
    ({"metric_definitions": {"acc": "no group"}}, "metric_definitions['acc']"),
    ({"tags": {"aws:reserved": "x"}}, "tags['aws:reserved']"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_SPECS)
def test_bad_specs_fail_before_any_aws_call(monkeypatch, fields, field):
    base = dict(job_queue="q", job_definition="d", command=["python", "-V"])
    base.update(fields)

    def no_aws(*args, **kwargs):
        raise AssertionError("an AWS call was made for a bad spec")

    monkeypatch.setattr(BatchMultiNodeTrainingOperator, "hook", property(no_aws))
    operator = BatchMultiNodeTrainingOperator(task_id="bad", spec=BatchTrainingSpec(**base))
    with pytest.raises(SpecError) as error:
        operator.execute({"ti": FakeTI("bad")})
    assert error.value.field == field, str(error.value)
