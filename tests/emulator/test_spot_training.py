"""Managed Spot training: an interruption (the emulator's fault switch) and a resume from the checkpoints."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import TRAINING_DIR, job_logs, training_request, upload_source, wait_for_job
from tests.emulator.test_training_jobs import METRICS

pytestmark = pytest.mark.emulator


def interrupt(emulator, name: str) -> int:
    request = urllib.request.Request(
        f"{emulator.endpoint_url}/moto-api/mlscale-faults/spot-interruption/{name}", method="POST", data=b""
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def spot_request(clients, name: str, epochs: int, instance_count: int = 1) -> dict:
    files = {f: (TRAINING_DIR / f).read_text() for f in ("train.py", "shard_loader.py")}
    source = upload_source(clients["s3"], files, f"code/{name}/sourcedir.tar.gz")
    return training_request(
        name,
        source,
        instance_count=instance_count,
        distributed=instance_count > 1,
        hyperparameters={"epochs": epochs},
        metrics=METRICS,
    )


def test_an_interrupted_spot_job_resumes_from_its_checkpoint(emulator, clients, digits_data):
    name = "spot-resumes"
    request = spot_request(clients, name, epochs=5, instance_count=2)
    request["InputDataConfig"] = [
        {"ChannelName": c, "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": digits_data[c]}}}
        for c in ("train", "test")
    ]
    request["EnableManagedSpotTraining"] = True
    request["StoppingCondition"]["MaxWaitTimeInSeconds"] = 1200
    request["CheckpointConfig"] = {
        "S3Uri": f"s3://mlscale-test/checkpoints/{name}/",
        "LocalPath": "/opt/ml/checkpoints",
    }
    clients["sagemaker"].create_training_job(**request)

    def epochs_done() -> int:
        lines = [line for stream in job_logs(clients["logs"], name).values() for line in stream]
        return len([line for line in lines if re.match(r"epoch=\d+ train_loss", line)])

    deadline = time.monotonic() + 240
    while epochs_done() < 4 and time.monotonic() < deadline:  # two epochs on each of the two hosts
        time.sleep(0.5)
    assert interrupt(emulator, name) == 200
    job = wait_for_job(clients["sagemaker"], name)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    statuses = [t["Status"] for t in job["SecondaryStatusTransitions"]]
    assert statuses[statuses.index("Training") + 1 : statuses.index("Training") + 4] == [
        "Interrupted",
        "Starting",
        "Training",
    ]
    logs = "\n".join(line for stream in job_logs(clients["logs"], name).values() for line in stream)
    resumed = [int(n) for n in re.findall(r"resumed from checkpoint epoch=(\d+)", logs)]
    assert len(resumed) == 2 and min(resumed) >= 2, resumed  # both hosts start again after the last saved epoch
    assert len(set(re.findall(r"weights_sha256=(\w+)", logs))) == 1  # DDP still agrees after the resume
    assert job["BillableTimeInSeconds"] < job["TrainingTimeInSeconds"]  # waiting for capacity is not billed
    metrics = {m["MetricName"]: m["Value"] for m in job["FinalMetricDataList"]}
    assert metrics["test:accuracy"] > 0.8
    saved = clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix=f"checkpoints/{name}/")["Contents"]
    names = {o["Key"].rsplit("/", 1)[1] for o in saved}
    # a save the reclaim cut short may have reached S3 too (SageMaker uploads the folder as it is); it is never read
    assert "checkpoint.pt" in names and names <= {"checkpoint.pt", "checkpoint.pt.partial"}, names


def test_the_fault_switch_refuses_what_is_not_a_running_spot_job(emulator, clients):
    assert interrupt(emulator, "no-such-job") == 404
    clients["sagemaker"].create_training_job(**spot_request(clients, "on-demand", epochs=1))
    assert interrupt(emulator, "on-demand") == 409  # not a Managed Spot job
    wait_for_job(clients["sagemaker"], "on-demand")
