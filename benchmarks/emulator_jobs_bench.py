"""Emulator overhead on a processing job and a Batch Transform, against the same work run directly.

- Processing: include/processing/shard.py over a week of raw digits Parquet (4 shards, 10% held out).
  Through the emulator: CreateProcessingJob to the job's ProcessingEndTime (inputs downloaded, outputs
  uploaded: what a user waits for, less the bench's own polling interval). Directly: the same script and
  arguments as one process on the same files already on disk.
- Batch Transform: the held-out features the processing job wrote (CSV, one record a line), through a model
  trained by the training bench. Through the emulator: CreateTransformJob (MultiRecord, 6 MB payloads) to
  the job's TransformEndTime. Directly: one process that loads the same handler chain (the PyTorch inference
  toolkit's defaults) and answers the same batches, the model already unpacked.
Rounds interleave the two sides.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARD = REPO / "include" / "processing" / "shard.py"
SHARD_ARGS = ["--shards", "4", "--test-fraction", "0.1", "--seed", "1"]
ROLE = "arn:aws:iam::123456789012:role/bench"
DIRECT_TRANSFORM = """
import sys, time
from pathlib import Path
from mlscale_emulator.executors.transform import batches, split_records
from mlscale_emulator.serving.handlers import HandlerChain
chain = HandlerChain(Path(sys.argv[1]), None, "inference.py")
out = Path(sys.argv[3])
for path in sorted(Path(sys.argv[2]).iterdir()):
    answers = [chain(batch, "text/csv", "text/csv")[0]
               for batch in batches(split_records(path.read_bytes(), "Line"), "MultiRecord", 6, "Line")]
    (out / (path.name + ".out")).write_bytes(b"\\n".join(answers))
"""


def _wait(describe, key: str, status_field: str) -> dict:
    while (job := describe(**key))[status_field] in ("InProgress", "Stopping"):
        time.sleep(0.1)
    return job


def stage_raw(s3, bucket: str, work: Path, records_per_day: int) -> Path:
    """A week of raw Parquet, on disk and in S3 under raw/."""
    import pyarrow.parquet as pq

    from mlscale_example.datasets.raw_digits import generate_day

    raw = work / "raw"
    for offset in range(7):
        day = date(2026, 11, 1) + timedelta(days=offset)
        folder = raw / f"dt={day}"
        folder.mkdir(parents=True)
        pq.write_table(generate_day(day, records_per_day), folder / "part-00000.parquet")
        s3.upload_file(str(folder / "part-00000.parquet"), bucket, f"raw/dt={day}/part-00000.parquet")
    s3.upload_file(str(SHARD), bucket, "code/shard.py")
    return raw


def processing_through_emulator(sagemaker, bucket: str, name: str) -> float:
    """From CreateProcessingJob to the job's end as the service records it (ProcessingEndTime: inputs downloaded,
    the script run, outputs uploaded); the bench's own polling interval is not the emulator's time."""

    def output(kind: str) -> dict:
        return {
            "OutputName": kind,
            "S3Output": {
                "S3Uri": f"s3://{bucket}/{name}/{kind}/",
                "LocalPath": f"/opt/ml/processing/output/{kind}",
                "S3UploadMode": "EndOfJob",
            },
        }

    started = time.time()
    sagemaker.create_processing_job(
        ProcessingJobName=name,
        RoleArn=ROLE,
        AppSpecification={
            "ImageUri": "pytorch-training:2",
            "ContainerEntrypoint": ["python3", "/opt/ml/processing/input/code/shard.py"],
            "ContainerArguments": SHARD_ARGS,
        },
        ProcessingInputs=[
            {
                "InputName": "code",
                "S3Input": {
                    "S3Uri": f"s3://{bucket}/code/shard.py",
                    "S3DataType": "S3Prefix",
                    "LocalPath": "/opt/ml/processing/input/code",
                    "S3InputMode": "File",
                },
            },
            {
                "InputName": "data",
                "S3Input": {
                    "S3Uri": f"s3://{bucket}/raw/",
                    "S3DataType": "S3Prefix",
                    "LocalPath": "/opt/ml/processing/input/data",
                    "S3InputMode": "File",
                },
            },
        ],
        ProcessingOutputConfig={"Outputs": [output("shards"), output("test"), output("eval")]},
        ProcessingResources={
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 10}
        },
        StoppingCondition={"MaxRuntimeInSeconds": 600},
    )
    job = _wait(sagemaker.describe_processing_job, {"ProcessingJobName": name}, "ProcessingJobStatus")
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    return job["ProcessingEndTime"].timestamp() - started


def processing_directly(raw: Path, out: Path) -> float:
    (out / "config").mkdir(parents=True, exist_ok=True)
    (out / "config" / "resourceconfig.json").write_text(json.dumps({"current_host": "algo-1", "hosts": ["algo-1"]}))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SM_"))},
        "SAGEMAKER_PROCESSING_ROOT": str(out),
    }
    command = [
        sys.executable,
        str(SHARD),
        "--input-dir",
        str(raw),
        "--output-dir",
        str(out / "shards"),
        "--test-dir",
        str(out / "test"),
        "--eval-dir",
        str(out / "eval"),
        *SHARD_ARGS,
    ]
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def transform_through_emulator(sagemaker, bucket: str, model: str, features: str, name: str) -> float:
    """From CreateTransformJob to the job's TransformEndTime (the outputs written)."""
    started = time.time()
    sagemaker.create_transform_job(
        TransformJobName=name,
        ModelName=model,
        BatchStrategy="MultiRecord",
        MaxPayloadInMB=6,
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": features}},
            "ContentType": "text/csv",
            "SplitType": "Line",
        },
        TransformOutput={"S3OutputPath": f"s3://{bucket}/{name}/", "Accept": "text/csv", "AssembleWith": "Line"},
        TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1},
    )
    job = _wait(sagemaker.describe_transform_job, {"TransformJobName": name}, "TransformJobStatus")
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    return job["TransformEndTime"].timestamp() - started


def transform_directly(model_dir: Path, features: Path, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", DIRECT_TRANSFORM, str(model_dir), str(features), str(out)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def figures(s3, sagemaker, work: Path, model_artifact: str, rounds: int, records_per_day: int) -> list:
    """Processing and transform overhead; `model_artifact` is a training job's model.tar.gz (S3 URI)."""
    from goals import Figure, median, spread

    bucket = "mlscale-bench-jobs"
    s3.create_bucket(Bucket=bucket)
    raw = stage_raw(s3, bucket, work, records_per_day)
    emulated, direct = [], []
    for round_ in range(rounds):
        emulated.append(processing_through_emulator(sagemaker, bucket, f"bench-shard-{round_}"))
        direct.append(processing_directly(raw, work / f"shard-{round_}"))
    results = [
        Figure(
            "emulator_overhead_processing",
            median(emulated),
            median(direct),
            "<= 1.1",
            "s",
            f"shard.py over 7 x {records_per_day:,} records; emulator {spread(emulated)}; direct {spread(direct)}",
        )
    ]

    model_bucket, model_key = model_artifact.removeprefix("s3://").split("/", 1)
    model_dir = work / "model"
    model_dir.mkdir()
    tarfile.open(fileobj=io.BytesIO(s3.get_object(Bucket=model_bucket, Key=model_key)["Body"].read())).extractall(
        model_dir, filter="data"
    )
    sagemaker.create_model(
        ModelName="bench-transform",
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": "pytorch-inference:2", "ModelDataUrl": model_artifact},
    )
    features = work / "shard-0" / "eval" / "features"
    emulated, direct = [], []
    for round_ in range(rounds):
        emulated.append(
            transform_through_emulator(
                sagemaker,
                bucket,
                "bench-transform",
                f"s3://{bucket}/bench-shard-0/eval/features/",
                f"bench-tr-{round_}",
            )
        )
        direct.append(transform_directly(model_dir, features, work / f"transformed-{round_}"))
    records = sum(1 for path in features.iterdir() for _ in path.open())
    results.append(
        Figure(
            "emulator_overhead_batch_transform",
            median(emulated),
            median(direct),
            "<= 1.1",
            "s",
            f"{records:,} CSV records, MultiRecord; emulator {spread(emulated)}; direct {spread(direct)}",
        )
    )
    return results
