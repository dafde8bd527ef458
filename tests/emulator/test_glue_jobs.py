"""Glue Python-shell jobs on the emulator run their script, with Glue's states and reasons."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.emulator

SCRIPT = """
import sys, boto3
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
boto3.client("s3").put_object(Bucket="mlscale-test", Key="glue/out/" + args["--day"] + ".txt", Body=args["--JOB_NAME"])
print("wrote", args["--day"])
if args.get("--fail") == "yes":
    raise ValueError("partition " + args["--day"] + " is empty")
"""


@pytest.fixture(scope="module")
def glue(emulator, clients):
    import boto3

    clients["s3"].put_object(Bucket="mlscale-test", Key="glue/scripts/job.py", Body=SCRIPT.encode())
    client = boto3.client("glue", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    client.create_job(
        Name="prepare",
        Role="arn:aws:iam::123456789012:role/glue",
        Command={
            "Name": "pythonshell",
            "ScriptLocation": "s3://mlscale-test/glue/scripts/job.py",
            "PythonVersion": "3.9",
        },
        DefaultArguments={"--day": "2026-11-01"},
        ExecutionProperty={"MaxConcurrentRuns": 3},
    )
    return client


def wait(glue, run_id):
    for _ in range(300):
        run = glue.get_job_run(JobName="prepare", RunId=run_id)["JobRun"]
        if run["JobRunState"] not in ("STARTING", "RUNNING"):
            return run
        time.sleep(0.1)
    raise TimeoutError(run_id)


def test_python_shell_run_executes_the_script_with_its_arguments(glue, clients):
    run_id = glue.start_job_run(JobName="prepare", Arguments={"--day": "2026-11-02"})["JobRunId"]
    assert glue.get_job_run(JobName="prepare", RunId=run_id)["JobRun"]["JobRunState"] == "RUNNING"
    run = wait(glue, run_id)
    assert run["JobRunState"] == "SUCCEEDED"
    body = clients["s3"].get_object(Bucket="mlscale-test", Key="glue/out/2026-11-02.txt")["Body"].read()
    assert body == b"prepare"


def test_failed_run_reports_the_error(glue):
    run = wait(glue, glue.start_job_run(JobName="prepare", Arguments={"--fail": "yes"})["JobRunId"])
    assert run["JobRunState"] == "FAILED"
    assert "ValueError: partition 2026-11-01 is empty" in run["ErrorMessage"]
