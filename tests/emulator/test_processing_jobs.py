"""CreateProcessingJob on the emulator really runs the entrypoint, over the plain AWS API."""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.emulator

SCRIPT = """
import json, os, sys
inputs = sorted(os.listdir("/opt/ml/processing/input/data"))
config = json.load(open("/opt/ml/config/resourceconfig.json"))
os.makedirs("/opt/ml/processing/output/result", exist_ok=True)
with open(f"/opt/ml/processing/output/result/{config['current_host']}.json", "w") as f:
    json.dump({"inputs": inputs, "args": sys.argv[1:], "hosts": config["hosts"]}, f)
open("/opt/ml/output/message", "w").write("processed " + str(len(inputs)))
if "--fail" in sys.argv:
    raise SystemExit("bad input row 7")
"""


def start(clients, name, args=(), instances=1, distribution="FullyReplicated", max_runtime=300, script=SCRIPT):
    s3 = clients["s3"]
    s3.put_object(Bucket="mlscale-test", Key=f"proc/{name}/code/job.py", Body=script.encode())
    for i in range(4):
        s3.put_object(Bucket="mlscale-test", Key=f"proc/{name}/data/part-{i}.txt", Body=b"x")
    clients["sagemaker"].create_processing_job(
        ProcessingJobName=name,
        RoleArn="arn:aws:iam::123456789012:role/x",
        AppSpecification={
            "ImageUri": "image:1",
            "ContainerEntrypoint": ["python3", "/opt/ml/processing/input/code/job.py"],
            "ContainerArguments": list(args) or ["--x", "1"],
        },
        ProcessingInputs=[
            {
                "InputName": "code",
                "S3Input": {
                    "S3Uri": f"s3://mlscale-test/proc/{name}/code/job.py",
                    "LocalPath": "/opt/ml/processing/input/code",
                    "S3DataType": "S3Prefix",
                    "S3InputMode": "File",
                },
            },
            {
                "InputName": "data",
                "S3Input": {
                    "S3Uri": f"s3://mlscale-test/proc/{name}/data/",
                    "LocalPath": "/opt/ml/processing/input/data",
                    "S3DataType": "S3Prefix",
                    "S3InputMode": "File",
                    "S3DataDistributionType": distribution,
                },
            },
        ],
        ProcessingOutputConfig={
            "Outputs": [
                {
                    "OutputName": "result",
                    "S3Output": {
                        "S3Uri": f"s3://mlscale-test/proc/{name}/out/",
                        "LocalPath": "/opt/ml/processing/output/result",
                        "S3UploadMode": "EndOfJob",
                    },
                }
            ]
        },
        ProcessingResources={
            "ClusterConfig": {"InstanceCount": instances, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 10}
        },
        StoppingCondition={"MaxRuntimeInSeconds": max_runtime},
    )


def wait(sagemaker, name, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = sagemaker.describe_processing_job(ProcessingJobName=name)
        if job["ProcessingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return job
        time.sleep(0.3)
    raise TimeoutError(name)


def outputs(s3, name):
    import json

    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="mlscale-test", Prefix=f"proc/{name}/out/").get("Contents", [])]
    return {k.rsplit("/", 1)[1]: json.loads(s3.get_object(Bucket="mlscale-test", Key=k)["Body"].read()) for k in keys}


def test_sharded_input_on_two_instances(clients):
    start(clients, "proc-sharded", instances=2, distribution="ShardedByS3Key")
    assert (
        clients["sagemaker"].describe_processing_job(ProcessingJobName="proc-sharded")["ProcessingJobStatus"]
        == "InProgress"
    )
    job = wait(clients["sagemaker"], "proc-sharded")
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["ExitMessage"] == "processed 2"
    seen = outputs(clients["s3"], "proc-sharded")
    assert set(seen) == {"algo-1.json", "algo-2.json"}
    parts = seen["algo-1.json"]["inputs"] + seen["algo-2.json"]["inputs"]
    assert sorted(parts) == [f"part-{i}.txt" for i in range(4)]  # disjoint, together everything
    assert seen["algo-1.json"]["args"] == ["--x", "1"] and seen["algo-1.json"]["hosts"] == ["algo-1", "algo-2"]


def test_fully_replicated_gives_every_instance_everything(clients):
    start(clients, "proc-replicated", instances=2)
    assert wait(clients["sagemaker"], "proc-replicated")["ProcessingJobStatus"] == "Completed"
    assert all(len(v["inputs"]) == 4 for v in outputs(clients["s3"], "proc-replicated").values())


def test_failure_reason_and_exit_message(clients):
    start(clients, "proc-fails", args=["--fail"])
    job = wait(clients["sagemaker"], "proc-fails")
    assert job["ProcessingJobStatus"] == "Failed"
    assert "bad input row 7" in job["FailureReason"] and job["ExitMessage"] == "processed 4"


def test_stop_and_max_runtime(clients):
    sleeper = "import time\ntime.sleep(300)\n"
    start(clients, "proc-stopped", script=sleeper)
    time.sleep(1.5)
    clients["sagemaker"].stop_processing_job(ProcessingJobName="proc-stopped")
    assert wait(clients["sagemaker"], "proc-stopped")["ProcessingJobStatus"] == "Stopped"
    with pytest.raises(ClientError, match="processing job is in status Stopped"):
        clients["sagemaker"].stop_processing_job(ProcessingJobName="proc-stopped")
    start(clients, "proc-too-long", script=sleeper, max_runtime=2)
    assert wait(clients["sagemaker"], "proc-too-long")["ProcessingJobStatus"] == "Stopped"
