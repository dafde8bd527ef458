"""`airflow backfill create` over three past weeks, run by the real scheduler and triggerer of `mlscale airflow`."""

from __future__ import annotations

import re

import pytest

from tests.stack.conftest import dump, emulator_client

# Small weeks, one instance, one epoch: the point is three intervals, not accuracy.
CONF = '{"records_per_day": 300, "epochs": 1, "instance_count": 1, "poll_interval": 2, "min_accuracy": 0.5}'
RUNS = ["backfill__2026-10-11T00:00:00+00:00", "backfill__2026-10-18T00:00:00+00:00",
        "backfill__2026-10-25T00:00:00+00:00"]  # fmt: skip


@pytest.mark.e2e
def test_backfill_retrains_three_past_weeks_registers_three_models_and_deploys_none(airflow_stack):
    stack = airflow_stack
    out = stack.airflow_cli("backfill", "create", "--dag-id", "mlscale_pipeline", "--from-date", "2026-10-05",
                            "--to-date", "2026-10-25", "--max-active-runs", "2", "--dag-run-conf", CONF)  # fmt: skip
    assert out is not None
    stack.unpause()  # nothing of a paused DAG runs, backfills included
    runs = stack.wait_for_runs(RUNS, timeout=900)
    assert all(run["state"] == "success" for run in runs.values()), stack.failure_report(RUNS)
    assert {run["run_type"] for run in runs.values()} == {"backfill"}

    # each run trained on its own week: the week before its logical date (Airflow 3's @weekly has no interval width)
    windows = [stack.xcom(r, "stage_raw_data") for r in RUNS]
    assert [(w["window_start"], w["window_end"]) for w in windows] == [
        ("2026-10-04", "2026-10-11"), ("2026-10-11", "2026-10-18"), ("2026-10-18", "2026-10-25")]  # fmt: skip
    assert len({w["etl_prefix"] for w in windows}) == 3

    trains = [stack.xcom(r, "train") for r in RUNS]
    names = [t["job_name"] for t in trains]
    assert len(set(names)) == 3, names  # no name collisions
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

    # three model packages registered, one per run (decisions may differ: each is judged against the champion)
    packages = [stack.xcom(r, "evaluate")["model_package_arn"] for r in RUNS]
    assert len(set(packages)) == 3
    registered = {p["ModelPackageArn"] for p in sagemaker.list_model_packages(
        ModelPackageGroupName="mlscale-digits", MaxResults=100)["ModelPackageSummaryList"]}  # fmt: skip
    assert set(packages) <= registered, dump(registered)

    # a backfill never deploys a model trained on older data over the current one
    for run_id in RUNS:
        states = stack.task_states(run_id)
        assert states["deploy_endpoint"]["state"] == "skipped" and states["deploy_edge"]["state"] == "skipped"

    # the training pool (1 slot) bounds concurrency: no two training jobs ran at once, max_active_runs=2 or not
    # (the weekly run that unpausing started included). The task instances may overlap for a moment: a resumed
    # task gives its slot back while it waits to be queued again, but its job has ended by then.
    assert all(stack.task_states(r)["train"]["pool"] == "mlscale_training" for r in RUNS)
    jobs = [sagemaker.describe_training_job(TrainingJobName=j["TrainingJobName"]) for j in sagemaker.list_training_jobs(
        NameContains="mlscale-pipeline-train", MaxResults=100)["TrainingJobSummaries"]]  # fmt: skip
    spans = sorted((job["CreationTime"], job["TrainingEndTime"], job["TrainingJobName"]) for job in jobs)
    assert len(spans) >= 3
    for earlier, later in zip(spans, spans[1:]):
        assert earlier[1] <= later[0], dump(spans)
