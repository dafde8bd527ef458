"""`airflow backfill create` over two past weeks, run by the real scheduler and triggerer of `mlscale airflow`:
one producer run loads their history (announcing none of it), then the pipeline's backfill retrains on it."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_for_job
from tests.stack.conftest import PRODUCER, dump, emulator_client

# Small days, one instance, one epoch: the point is several intervals (two, run at once), not accuracy. The
# history, 10-11 .. 10-24, in one producer run (a producer backfill, one run a day, does the same and announces
# nothing either: unit-tested)
HISTORY = {"records_per_day": 300, "days": 14, "announce": False}
CONF = '{"epochs": 1, "instance_count": 1, "poll_interval": 2, "min_accuracy": 0.5}'
RUNS = [
    "backfill__2026-10-18T00:00:00+00:00",
    "backfill__2026-10-25T00:00:00+00:00",
]


@pytest.mark.e2e
def test_backfill_retrains_two_past_weeks_at_once_registers_two_models_and_deploys_none(airflow_stack, live_arrival):
    stack = airflow_stack  # both DAGs unpaused (nothing of a paused DAG runs, backfills included)
    history = stack.trigger(PRODUCER, HISTORY, logical_date="2026-10-25T00:00:00Z")
    loaded = stack.wait_for_runs([history], timeout=300, dag_id=PRODUCER)[history]
    assert loaded["state"] == "success", stack.failure_report([history], PRODUCER)
    assert stack.xcom(history, "write_partitions", PRODUCER)["written"][::13] == ["2026-10-11", "2026-10-24"]
    # a history load announces nothing: the one notice is the live run's (a week, on a new installation)
    s3 = emulator_client(stack, "s3")
    notices = [o["Key"] for o in s3.list_objects_v2(Bucket="mlscale-demo", Prefix="mlscale/raw/_arrivals/")["Contents"]]
    assert len(notices) == 1 and live_arrival["notice"].endswith(notices[0]), notices

    stack.airflow_cli(
        "backfill",
        "create",
        "--dag-id",
        "mlscale_pipeline",
        "--from-date",
        "2026-10-12",
        "--to-date",
        "2026-10-25",
        "--max-active-runs",
        "2",
        "--dag-run-conf",
        CONF,
    )
    runs = stack.wait_for_runs(RUNS, timeout=900)
    assert all(run["state"] == "success" for run in runs.values()), stack.failure_report(RUNS)
    assert {run["run_type"] for run in runs.values()} == {"backfill"}

    # each run trained on its own week: the week before its logical date (Airflow 3's @weekly has no interval width)
    windows = [stack.xcom(r, "plan_run") for r in RUNS]
    assert [(w["window_start"], w["window_end"]) for w in windows] == [
        ("2026-10-11", "2026-10-18"),
        ("2026-10-18", "2026-10-25"),
    ]
    assert len({w["etl_prefix"] for w in windows}) == 2

    trains = [stack.xcom(r, "train") for r in RUNS]
    names = [t["job_name"] for t in trains]
    assert len(set(names)) == 2, names  # no name collisions
    sagemaker = emulator_client(stack, "sagemaker")
    for name, train in zip(names, trains):
        job = sagemaker.describe_training_job(TrainingJobName=name)
        assert job["TrainingJobStatus"] == "Completed"
        assert job["ModelArtifacts"]["S3ModelArtifacts"] == train["model_artifact"]

    # the task log follows the job: its CloudWatch lines and a progress line per epoch (written by the triggerer)
    log = stack.task_log(RUNS[0], "train")
    assert "[algo-1] epoch=1 train_loss=" in log
    # the status is whatever the poll saw with the epoch's line (Training, Uploading or Completed)
    assert re.search(rf"progress: {names[0]}: \w+, epoch 1/1 \(100%\)", log), log[-3000:]

    # two model packages registered, one per run (decisions may differ: each is judged against the champion)
    packages = [stack.xcom(r, "evaluate")["model_package_arn"] for r in RUNS]
    assert len(set(packages)) == 2
    registered = {
        p["ModelPackageArn"]
        for p in sagemaker.list_model_packages(ModelPackageGroupName="mlscale-digits", MaxResults=100)[
            "ModelPackageSummaryList"
        ]
    }
    assert set(packages) <= registered, dump(registered)

    # a backfill never deploys a model trained on older data over the current one
    for run_id in RUNS:
        states = stack.task_states(run_id)
        assert states["deploy_endpoint"]["state"] == "skipped" and states["deploy_edge"]["state"] == "skipped"

    # the training pool (1 slot) bounds concurrency: no two training jobs ran at once, max_active_runs=2 or not
    # (the run the live producer run's arrival started included). The task instances may overlap for a moment: a resumed
    # task gives its slot back while it waits to be queued again, but its job has ended by then.
    assert all(stack.task_states(r)["train"]["pool"] == "mlscale_training" for r in RUNS)
    # other runs' jobs count too; one may still be training (no end time yet): wait for each to end
    jobs = [
        wait_for_job(sagemaker, j["TrainingJobName"], timeout=600)
        for j in sagemaker.list_training_jobs(NameContains="mlscale-pipeline-train", MaxResults=100)[
            "TrainingJobSummaries"
        ]
    ]
    spans = sorted((job["CreationTime"], job["TrainingEndTime"], job["TrainingJobName"]) for job in jobs)
    assert len(spans) >= 2
    for earlier, later in zip(spans, spans[1:]):
        assert earlier[1] <= later[0], dump(spans)
