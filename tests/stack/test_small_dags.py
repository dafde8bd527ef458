"""The two small example DAGs on the real scheduler and triggerer: the minimal one, and submit + sensor."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from tests.stack.conftest import dump, emulator_client

pytestmark = pytest.mark.e2e


def test_submit_then_sensor_for_training_and_the_endpoint(airflow_stack, data_prefix):
    """Also: the triggerer and then the scheduler SIGKILLed while the sensor waits; `mlscale airflow` starts
    each again, and the run goes on to success."""
    import time

    stack, dag_id = airflow_stack, "mlscale_submit_and_sense"
    stack.unpause(dag_id)
    run_id = stack.trigger(dag_id, {"data_prefix": data_prefix, "epochs": 2})
    deadline = time.monotonic() + 300
    while stack.task_states(run_id, dag_id).get("training_done", {}).get("state") != "deferred":
        assert time.monotonic() < deadline, dump(stack.task_states(run_id, dag_id))
        time.sleep(0.5)
    stack.kill_component("triggerer")
    stack.kill_component("scheduler")
    run = stack.wait_for_runs([run_id], timeout=600, dag_id=dag_id)[run_id]
    assert run["state"] == "success", stack.failure_report([run_id], dag_id)
    states = stack.task_states(run_id, dag_id)
    assert {t: ti["state"] for t, ti in states.items()} == dict.fromkeys(
        ["submit_training", "training_done", "submit_endpoint", "endpoint_in_service"], "success"
    )
    submitted = stack.xcom(run_id, "submit_training", dag_id)
    assert submitted["status"] == "InProgress"  # the stage ended at the create
    trained = stack.xcom(run_id, "training_done", dag_id)
    assert trained["job_name"] == submitted["job_name"] and trained["status"] == "Completed", dump(trained)
    assert trained["final_metrics"]["test:accuracy"] > 0.5
    # the deferred sensor streamed the job's log through the triggerer into its task log
    log = stack.task_log(run_id, "training_done", dag_id=dag_id)
    assert "[algo-1] epoch=1" in log and "Completed" in log, log[-3000:]
    served = stack.xcom(run_id, "endpoint_in_service", dag_id)
    assert served["status"] == "InService" and served["endpoint_name"] == "mlscale-submit-and-sense"
    runtime = emulator_client(stack, "sagemaker-runtime")
    answer = runtime.invoke_endpoint(
        EndpointName="mlscale-submit-and-sense", ContentType="application/json", Body=json.dumps([[0.0] * 64])
    )
    assert len(json.loads(answer["Body"].read())[0]) == 10  # one score per digit


def test_the_minimal_dag_asks_a_person_who_rejects_the_model_through_the_rest_api(airflow_stack, data_prefix):
    """gate_mode=manual on the real scheduler: evaluate registers PendingManualApproval, approve waits
    (awaiting_input) with its question in the HITL REST API; a Reject there marks the package Rejected and
    skips the deployment."""
    stack, dag_id = airflow_stack, "mlscale_minimal"
    run_id = stack.run_minimal_to_the_gate(data_prefix)
    evaluation = stack.xcom(run_id, "evaluate", dag_id)
    assert evaluation["decision"] == "PendingManualApproval" and evaluation["metrics"]["accuracy"] > 0.5, dump(
        evaluation
    )
    detail = stack.hitl_detail(run_id, "approve", dag_id)
    assert detail["options"] == ["Approve", "Reject"] and detail["response_received"] is False
    assert "| accuracy |" in detail["body"] and "/mlscale/run?dag_id=mlscale_minimal" in detail["body"]
    stack.answer_hitl(run_id, "approve", "Reject", dag_id)
    run = stack.wait_for_runs([run_id], timeout=300, dag_id=dag_id)[run_id]
    assert run["state"] == "success", stack.failure_report([run_id], dag_id)
    states = {task: ti["state"] for task, ti in stack.task_states(run_id, dag_id).items()}
    assert states["approve"] == "success" and states["deploy"] == "skipped", states
    assert stack.xcom(run_id, "approve", dag_id)["decision"] == "Rejected"
    package = emulator_client(stack, "sagemaker").describe_model_package(
        ModelPackageName=evaluation["model_package_arn"]
    )
    assert package["ModelApprovalStatus"] == "Rejected" and package["ApprovalDescription"].startswith("Rejected by ")


def test_marking_a_deferred_training_task_failed_stops_its_job(airflow_stack, data_prefix):
    """The trigger's on_kill: the triggerer, not a worker, holds the wait when the user acts."""
    import time

    from mlscale.naming import resource_name

    stack, dag_id = airflow_stack, "mlscale_minimal"
    stack.unpause(dag_id)
    run_id = stack.trigger(dag_id, {"data_prefix": data_prefix, "epochs": 200, "poll_interval": 2})
    name = resource_name(dag_id, "train", run_id)  # the stage's deterministic job name
    # Airflow calls a trigger's on_kill only while the triggerer runs it: wait until the trigger logs the job
    deadline = time.monotonic() + 300
    while stack.task_states(run_id, dag_id).get("train", {}).get("state") != "deferred" or (
        f"{name}: Training" not in stack.task_log(run_id, "train", dag_id=dag_id)
    ):
        assert time.monotonic() < deadline, dump(stack.task_states(run_id, dag_id))
        time.sleep(1)
    sagemaker = emulator_client(stack, "sagemaker")
    assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] == "InProgress"
    with stack.api() as api:  # what "Mark as failed" in the UI sends
        api.patch(
            f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/train", json={"new_state": "failed"}
        ).raise_for_status()
    deadline = time.monotonic() + 120
    while (status := sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]) == "InProgress":
        assert time.monotonic() < deadline, f"{name} still {status} after its task was marked failed"
        time.sleep(1)
    assert status in ("Stopping", "Stopped")
    assert stack.wait_for_runs([run_id], timeout=120, dag_id=dag_id)[run_id]["state"] == "failed"


def test_a_worker_killed_while_a_stage_runs_leaves_one_job_that_the_next_try_reattaches(airflow_stack, data_prefix):
    """Celery: SIGKILL the worker that runs `train` (as a lost machine); its task fails once its heartbeat is
    stale, the user clears it, and the new try, on whichever worker, finds the first try's job by its name."""
    import shutil
    import time

    from mlscale.naming import resource_name

    if not shutil.which("redis-server"):
        pytest.skip("the stack runs Celery workers only where redis-server is installed (make test installs it)")
    stack, dag_id = airflow_stack, "mlscale_minimal"
    stack.unpause(dag_id)
    run_id = stack.trigger(dag_id, {"data_prefix": data_prefix, "epochs": 2, "poll_interval": 2})
    deadline = time.monotonic() + 300
    while (train := stack.task_states(run_id, dag_id).get("train", {})).get("state") != "running" or not train.get(
        "pid"
    ):
        assert time.monotonic() < deadline, dump(stack.task_states(run_id, dag_id))
        time.sleep(0.1)
    task = psutil.Process(train["pid"])
    worker = next(p for p in task.parents() if "celery worker" in " ".join(p.cmdline()))
    group = os.getpgid(worker.pid)
    worker.send_signal(signal.SIGKILL)

    deadline = time.monotonic() + 240  # the heartbeat timeout (30 s here) fails it, unless it deferred first
    while (state := stack.task_states(run_id, dag_id)["train"]["state"]) not in ("failed", "deferred", "success"):
        assert time.monotonic() < deadline, dump(stack.task_states(run_id, dag_id))
        time.sleep(1)
    assert not [p for p in psutil.process_iter() if _group(p) == group], "the killed worker left processes"
    if state == "failed":
        # the run first ends failed (its downstream upstream_failed): a clear that races the scheduler's
        # decisions for the failed task can see them land after it
        stack.wait_for_runs([run_id], timeout=300, dag_id=dag_id)
        with stack.api() as api:  # what "Clear" on the failed task, with its downstream, in the UI sends
            api.post(
                f"/dags/{dag_id}/clearTaskInstances",
                json={
                    "dry_run": False,
                    "dag_run_id": run_id,
                    "task_ids": ["train"],
                    "include_downstream": True,
                    "only_failed": False,
                    "reset_dag_runs": True,
                },
            ).raise_for_status()
    run = stack.wait_for_runs([run_id], timeout=600, dag_id=dag_id)[run_id]
    assert run["state"] == "success", stack.failure_report([run_id], dag_id)
    name = resource_name(dag_id, "train", run_id)
    jobs = emulator_client(stack, "sagemaker").list_training_jobs(NameContains=name, MaxResults=100)
    assert [j["TrainingJobName"] for j in jobs["TrainingJobSummaries"]] == [name]  # one job, not two
    if state == "failed":  # the usual case: killed before it deferred, so the second try did the wait
        assert stack.task_states(run_id, dag_id)["train"]["try_number"] == 2


def _group(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, psutil.Error):
        return None
