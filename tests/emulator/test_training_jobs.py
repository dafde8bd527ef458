"""CreateTrainingJob on the emulator really trains, over the plain AWS API (boto3)."""

from __future__ import annotations

import io
import json
import re
import tarfile
import time
from datetime import UTC

import pytest
from botocore.exceptions import ClientError

from tests.conftest import TRAINING_DIR, job_logs, training_request, upload_source, wait_for_job

pytestmark = pytest.mark.emulator
SCRIPTS = __import__("pathlib").Path(__file__).parent / "scripts"
METRICS = {"test:accuracy": r"test_accuracy=([0-9.]+)", "train:loss": r"train_loss=([0-9.]+)"}


def model_files(s3, uri: str) -> dict[str, bytes]:
    bucket, key = uri[5:].split("/", 1)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def start(clients, name, files, **kwargs):
    source = upload_source(clients["s3"], files, f"code/{name}/sourcedir.tar.gz")
    clients["sagemaker"].create_training_job(**training_request(name, source, **kwargs))


def test_ddp_on_two_instances_averages_gradients(clients, digits_data):
    start(
        clients,
        "ddp-two-hosts",
        {f: (TRAINING_DIR / f).read_text() for f in ("train.py", "shard_loader.py")},
        instance_count=2,
        distributed=True,
        hyperparameters={"epochs": 4},
        channels={"train": digits_data["train"], "test": digits_data["test"]},
        metrics=METRICS,
    )
    first = clients["sagemaker"].describe_training_job(TrainingJobName="ddp-two-hosts")
    assert first["TrainingJobStatus"] == "InProgress"  # not born Completed, as moto would have it
    job = wait_for_job(clients["sagemaker"], "ddp-two-hosts")

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    assert [t["Status"] for t in job["SecondaryStatusTransitions"]] == [
        "Starting",
        "Downloading",
        "Training",
        "Uploading",
        "Completed",
    ]
    assert job["TrainingStartTime"] < job["TrainingEndTime"] and job["BillableTimeInSeconds"] >= 1
    logs = job_logs(clients["logs"], "ddp-two-hosts")
    assert sorted(re.sub(r"-\d+$", "", s.split("/")[1]) for s in logs) == ["algo-1", "algo-2"]
    digests = {}
    for lines in logs.values():
        for line in lines:
            if match := re.search(r"rank=(\d) weights_sha256=(\w+)", line):
                digests[match.group(1)] = match.group(2)
            assert "world_size=2" in "\n".join(lines)
    # Two real processes, each trained on its half of the data: identical weights only if DDP averaged.
    assert set(digests) == {"0", "1"} and digests["0"] == digests["1"]
    metrics = {m["MetricName"]: m["Value"] for m in job["FinalMetricDataList"]}
    assert metrics["test:accuracy"] > 0.8 and "train:loss" in metrics
    assert "model.pt" in model_files(clients["s3"], job["ModelArtifacts"]["S3ModelArtifacts"])


def test_script_from_a_sagemaker_example_runs_unchanged(clients, digits_data):
    start(
        clients,
        "sagemaker-example",
        {"mnist.py": (SCRIPTS / "sagemaker_style_mnist.py").read_text()},
        program="mnist.py",
        instance_count=2,
        hyperparameters={"epochs": 5, "backend": "gloo", "lr": 0.5},
        channels={"training": digits_data["train"]},
    )
    job = wait_for_job(clients["sagemaker"], "sagemaker-example")
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    sums = [
        re.search(r"weights_sum=(\S+)", "\n".join(lines)).group(1)
        for lines in job_logs(clients["logs"], "sagemaker-example").values()
    ]
    assert len(sums) == 2 and sums[0] == sums[1]
    seen = json.loads(model_files(clients["s3"], job["ModelArtifacts"]["S3ModelArtifacts"])["seen.json"])
    assert seen["argv"] == ["--backend", "gloo", "--epochs", "5", "--lr", "0.5"]
    assert seen["sm"]["SM_CURRENT_HOST"] == "algo-1" and json.loads(seen["sm"]["SM_HOSTS"]) == ["algo-1", "algo-2"]
    assert seen["cwd"].endswith("/algo-1/code")


FAILING = """
import sys
print("loading data")
raise ValueError("learning rate must be positive, got -1")
"""


def test_failure_under_torchrun_names_the_scripts_error_first(clients):
    start(clients, "fails-under-torchrun", {"train.py": FAILING}, instance_count=2, distributed=True)
    reason = wait_for_job(clients["sagemaker"], "fails-under-torchrun")["FailureReason"]
    # torchrun ends stderr with its own summary; the reason leads with the script's exception
    assert 'ErrorMessage "ValueError: learning rate must be positive, got -1' in reason


def test_failure_reports_the_scripts_error(clients):
    start(clients, "fails-with-reason", {"train.py": FAILING})
    job = wait_for_job(clients["sagemaker"], "fails-with-reason")
    assert job["TrainingJobStatus"] == "Failed" and job["SecondaryStatus"] == "Failed"
    reason = job["FailureReason"]
    assert reason.startswith("AlgorithmError: ExecuteUserScriptError:\nExitCode 1\n")
    assert "ValueError: learning rate must be positive, got -1" in reason
    assert len(reason) <= 1024


def test_failure_file_written_by_the_script_wins(clients):
    script = (
        "import os\nopen(os.path.join(os.environ['SM_OUTPUT_DIR'], 'failure'), 'w').write('Bad data: 3 rows')"
        "\nraise SystemExit(2)\n"
    )
    start(clients, "fails-with-file", {"train.py": script})
    assert wait_for_job(clients["sagemaker"], "fails-with-file")["FailureReason"] == "AlgorithmError: Bad data: 3 rows"


SLEEPER = """
import os, signal, sys, time
def on_term(*_):
    open(os.path.join(os.environ["SM_MODEL_DIR"], "saved-on-sigterm"), "w").write("1")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("started", flush=True)
time.sleep(300)
"""


def test_stop_sends_sigterm_and_ends_stopped(clients):
    start(clients, "stopped-by-user", {"train.py": SLEEPER})
    sm = clients["sagemaker"]
    deadline = time.monotonic() + 60
    # the script has set its SIGTERM handler once it prints (the job's log reaches CloudWatch as it runs)
    while not any(
        "started" in line for lines in job_logs(clients["logs"], "stopped-by-user").values() for line in lines
    ):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    sm.stop_training_job(TrainingJobName="stopped-by-user")
    assert sm.describe_training_job(TrainingJobName="stopped-by-user")["TrainingJobStatus"] in ("Stopping", "Stopped")
    job = wait_for_job(sm, "stopped-by-user", timeout=60)
    assert job["TrainingJobStatus"] == "Stopped" and job["SecondaryStatus"] == "Stopped"
    # the script's SIGTERM handler ran and what it saved was uploaded
    assert "saved-on-sigterm" in model_files(clients["s3"], job["ModelArtifacts"]["S3ModelArtifacts"])
    with pytest.raises(ClientError, match="training job is in status Stopped"):
        sm.stop_training_job(TrainingJobName="stopped-by-user")


def test_max_runtime_stops_the_job(clients):
    start(clients, "runs-too-long", {"train.py": SLEEPER}, max_runtime=2)
    job = wait_for_job(clients["sagemaker"], "runs-too-long", timeout=60)
    assert job["TrainingJobStatus"] == "Stopped" and job["SecondaryStatus"] == "MaxRuntimeExceeded"
    assert job["TrainingTimeInSeconds"] < 30


def test_duplicate_name_is_rejected(clients):
    start(clients, "only-once", {"train.py": "print('ok')"})
    with pytest.raises(ClientError) as error:
        start(clients, "only-once", {"train.py": "print('ok')"})
    assert error.value.response["Error"]["Code"] == "ResourceInUse"
    assert wait_for_job(clients["sagemaker"], "only-once")["TrainingJobStatus"] == "Completed"


def test_unknown_job_is_a_validation_error(clients):
    with pytest.raises(ClientError, match="Could not find training job"):
        clients["sagemaker"].describe_training_job(TrainingJobName="no-such-job")


def test_missing_input_data_fails_with_the_s3_reason(clients):
    start(clients, "no-data", {"train.py": "print('ok')"}, channels={"train": "s3://mlscale-test/nothing-here/"})
    job = wait_for_job(clients["sagemaker"], "no-data")
    assert job["TrainingJobStatus"] == "Failed"
    assert 'No S3 objects found under S3 URL "s3://mlscale-test/nothing-here/"' in job["FailureReason"]


def test_requirements_the_job_python_already_has_are_not_installed_again(clients, emulator):
    """A requirements.txt naming torch (as many public scripts' do) must not copy 1 GB into the job."""
    script = "import torch, numpy\nprint('torch', torch.__version__, flush=True)\n"
    start(clients, "requirements-satisfied", {"train.py": script, "requirements.txt": "torch\nnumpy>=1\n"})
    job = wait_for_job(clients["sagemaker"], "requirements-satisfied")
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    [site] = (emulator.jobs_dir / "training" / "requirements-satisfied" / "venv").glob("lib/python*/site-packages")
    assert not (site / "torch").exists() and sum(f.stat().st_size for f in site.rglob("*") if f.is_file()) < 1_000_000


def test_list_filters_by_last_modified_then_sorts_and_pages_with_secondary_status(clients):
    """What a shared poller asks (mlscale.waits.poller): which jobs changed since its last look."""
    from datetime import datetime

    sagemaker = clients["sagemaker"]
    quick = {"train.py": "print('done')\n"}
    for name in ("listing-a", "listing-b", "listing-c"):
        start(clients, name, quick)
    for name in ("listing-a", "listing-b", "listing-c"):
        assert wait_for_job(sagemaker, name)["TrainingJobStatus"] == "Completed"
    mark = datetime.now(UTC)
    time.sleep(0.01)  # a timestamp after the mark, on any clock resolution
    start(clients, "listing-d", quick)
    wait_for_job(sagemaker, "listing-d")

    changed = sagemaker.list_training_jobs(LastModifiedTimeAfter=mark, NameContains="listing-", MaxResults=1)
    assert [s["TrainingJobName"] for s in changed["TrainingJobSummaries"]] == ["listing-d"]
    assert "NextToken" not in changed  # filtered before it was paged
    summary = changed["TrainingJobSummaries"][0]
    assert summary["SecondaryStatus"] == "Completed" and summary["LastModifiedTime"] > mark
    newest = [
        s["TrainingJobName"]
        for p in sagemaker.get_paginator("list_training_jobs").paginate(
            NameContains="listing-", SortOrder="Descending", PaginationConfig={"PageSize": 1}
        )
        for s in p["TrainingJobSummaries"]
    ]
    assert newest[0] == "listing-d" and sorted(newest) == ["listing-a", "listing-b", "listing-c", "listing-d"]
    names = [
        s["TrainingJobName"]
        for p in sagemaker.get_paginator("list_training_jobs").paginate(
            NameContains="listing-", SortBy="Name", SortOrder="Descending", PaginationConfig={"PageSize": 1}
        )
        for s in p["TrainingJobSummaries"]
    ]
    assert names == ["listing-d", "listing-c", "listing-b", "listing-a"]
