"""AWS Batch on the emulator, through boto3 as any client: multi-node jobs really run, without Docker."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.conftest import batch_cluster

pytestmark = pytest.mark.emulator

ENV_DUMP = (
    "import json, os; print('ENV ' + json.dumps({k: v for k, v in os.environ.items() "
    "if k.startswith(('AWS_BATCH_', 'GREETING'))}))"
)


def wait_for(batch, job_id: str, statuses: tuple[str, ...], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = batch.describe_jobs(jobs=[job_id])["jobs"][0]
        if job["status"] in statuses:
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']}, not {statuses}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(emulator):
    """A compute environment of 4 vCPUs, a queue, and a 2-node job definition (2 vCPUs a node)."""
    return batch_cluster(emulator.endpoint_url, f"batch-test-{uuid.uuid4().hex[:6]}", 4, ["python", "-c", ENV_DUMP])


def submit(cluster, command=None, num_nodes=None, **extra) -> str:
    overrides = {}
    if num_nodes:
        overrides["numNodes"] = num_nodes
    if command:
        overrides["nodePropertyOverrides"] = [{"targetNodes": "0:", "containerOverrides": {"command": command}}]
    if overrides:
        extra["nodeOverrides"] = overrides
    return cluster["batch"].submit_job(
        jobName=f"job-{uuid.uuid4().hex[:8]}", jobQueue=cluster["queue"], jobDefinition=cluster["definition"], **extra
    )["jobId"]


def node_lines(cluster, job_id: str, index: int) -> list[str]:
    node = cluster["batch"].describe_jobs(jobs=[f"{job_id}#{index}"])["jobs"][0]
    events = cluster["logs"].get_log_events(
        logGroupName="/aws/batch/job", logStreamName=node["container"]["logStreamName"]
    )["events"]
    return [event["message"] for event in events]


def test_each_node_runs_with_batchs_environment_and_logs_to_cloudwatch(cluster):
    one_vcpu = [{"targetNodes": "0:", "containerOverrides": {"resourceRequirements": [{"type": "VCPU", "value": "1"}]}}]
    job_id = submit(cluster, nodeOverrides={"numNodes": 3, "nodePropertyOverrides": one_vcpu})  # 3 of the 4 vCPUs
    job = wait_for(cluster["batch"], job_id, ("SUCCEEDED", "FAILED"))
    assert job["status"] == "SUCCEEDED", job.get("statusReason")
    assert job["nodeProperties"]["numNodes"] == 3 and job["nodeProperties"]["mainNode"] == 0
    seen = {}
    for index in range(3):
        node = cluster["batch"].describe_jobs(jobs=[f"{job_id}#{index}"])["jobs"][0]
        assert node["nodeDetails"] == {"nodeIndex": index, "isMainNode": index == 0}
        assert node["status"] == "SUCCEEDED" and node["container"]["exitCode"] == 0
        env = json.loads(next(line for line in node_lines(cluster, job_id, index) if line.startswith("ENV "))[4:])
        seen[index] = env
        assert env["AWS_BATCH_JOB_ID"] == f"{job_id}#{index}"
        assert env["AWS_BATCH_JOB_NODE_INDEX"] == str(index) and env["AWS_BATCH_JOB_NUM_NODES"] == "3"
        assert env["AWS_BATCH_JOB_MAIN_NODE_INDEX"] == "0" and env["AWS_BATCH_JOB_ATTEMPT"] == "1"
        assert env["AWS_BATCH_JQ_NAME"] == cluster["queue_name"]
        assert env["AWS_BATCH_CE_NAME"] == cluster["environment_name"]
        assert env["GREETING"] == "from-the-definition"
    # the main node's address is given to the child nodes only
    assert "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS" not in seen[0]
    assert (
        seen[1]["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"]
        == seen[2]["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"]
        == "127.0.0.1"
    )
    assert job["attempts"][0]["container"]["exitCode"] == 0


def test_the_main_nodes_exit_code_decides_and_each_node_keeps_its_own(cluster):
    failing_main = (
        "import os, sys; node = int(os.environ['AWS_BATCH_JOB_NODE_INDEX']); "
        "print('node', node, flush=True); sys.exit(3 if node == 0 else 0)"
    )
    job = wait_for(cluster["batch"], submit(cluster, ["python", "-c", failing_main]), ("SUCCEEDED", "FAILED"))
    assert job["status"] == "FAILED" and job["statusReason"] == "Essential container in task exited"
    assert job["attempts"][0]["container"]["exitCode"] == 3
    main, child = cluster["batch"].describe_jobs(jobs=[f"{job['jobId']}#0", f"{job['jobId']}#1"])["jobs"]
    assert (main["container"]["exitCode"], child["container"]["exitCode"]) == (3, 0)
    assert main["status"] == "FAILED" and child["status"] == "SUCCEEDED"

    # a child that dies is left alone; the job succeeds with its main node (AWS's rule)
    failing_child = failing_main.replace("3 if node == 0 else 0", "5 if node == 1 else 0")
    job = wait_for(cluster["batch"], submit(cluster, ["python", "-c", failing_child]), ("SUCCEEDED", "FAILED"))
    assert job["status"] == "SUCCEEDED"
    child = cluster["batch"].describe_jobs(jobs=[f"{job['jobId']}#1"])["jobs"][0]
    assert child["status"] == "FAILED" and child["container"]["exitCode"] == 5


def test_a_job_stays_runnable_until_the_compute_environment_has_its_vcpus(cluster, tmp_path):
    release = tmp_path / "release"
    hold = ["python", "-c", f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.1)"]
    first = submit(cluster, hold)  # 2 nodes x 2 vCPUs: the whole environment
    wait_for(cluster["batch"], first, ("RUNNING",))
    second = submit(cluster, ["python", "-c", "print('second ran')"])
    deadline = time.monotonic() + 3  # the second cannot start while the first holds the vCPUs
    while time.monotonic() < deadline:
        assert cluster["batch"].describe_jobs(jobs=[second])["jobs"][0]["status"] in (
            "SUBMITTED",
            "PENDING",
            "RUNNABLE",
        )
        time.sleep(0.2)
    release.touch()
    assert wait_for(cluster["batch"], second, ("SUCCEEDED", "FAILED"))["status"] == "SUCCEEDED"
    assert wait_for(cluster["batch"], first, ("SUCCEEDED", "FAILED"))["status"] == "SUCCEEDED"


def test_terminate_stops_a_running_job_and_cancel_a_waiting_one(cluster, tmp_path):
    sleeper = ["python", "-c", "import time; print('started', flush=True); time.sleep(120)"]
    running = submit(cluster, sleeper)
    wait_for(cluster["batch"], running, ("RUNNING",))
    waiting = submit(cluster, sleeper)
    cluster["batch"].cancel_job(jobId=running, reason="cancel does not stop a running job")
    cluster["batch"].cancel_job(jobId=waiting, reason="not needed any more")
    cancelled = wait_for(cluster["batch"], waiting, ("FAILED", "SUCCEEDED"), timeout=10)
    assert cancelled["statusReason"] == "not needed any more"
    assert cluster["batch"].describe_jobs(jobs=[running])["jobs"][0]["status"] == "RUNNING"
    started = time.monotonic()
    cluster["batch"].terminate_job(jobId=running, reason="stopped by the test")
    terminated = wait_for(cluster["batch"], running, ("FAILED", "SUCCEEDED"), timeout=40)
    assert terminated["status"] == "FAILED" and terminated["statusReason"] == "stopped by the test"
    assert time.monotonic() - started < 30  # SIGTERM stopped the sleeper: no wait for the kill


def test_attempt_duration_and_retry_strategy(cluster):
    sleeper = ["python", "-c", "import time; time.sleep(60)"]
    timed_out = submit(cluster, sleeper, timeout={"attemptDurationSeconds": 2})
    job = wait_for(cluster["batch"], timed_out, ("FAILED", "SUCCEEDED"), timeout=40)
    assert job["statusReason"] == "Job attempt duration exceeded timeout"

    exit_7 = ["python", "-c", "import sys; sys.exit(7)"]
    retried = submit(
        cluster,
        exit_7,
        retryStrategy={
            "attempts": 3,
            "evaluateOnExit": [{"onExitCode": "7", "action": "RETRY"}, {"onReason": "*", "action": "EXIT"}],
        },
    )
    job = wait_for(cluster["batch"], retried, ("FAILED", "SUCCEEDED"))
    assert [a["container"]["exitCode"] for a in job["attempts"]] == [7, 7, 7]
    not_retried = submit(
        cluster, exit_7, retryStrategy={"attempts": 3, "evaluateOnExit": [{"onExitCode": "7", "action": "EXIT"}]}
    )
    job = wait_for(cluster["batch"], not_retried, ("FAILED", "SUCCEEDED"))
    assert len(job["attempts"]) == 1 and job["status"] == "FAILED"


def test_state_changes_reach_an_sns_topic_through_an_eventbridge_rule(cluster):
    topic = cluster["sns"].create_topic(Name=f"{cluster['name']}-activity")["TopicArn"]
    queue_url = cluster["sqs"].create_queue(QueueName=f"{cluster['name']}-activity")["QueueUrl"]
    queue_arn = cluster["sqs"].get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    cluster["sns"].subscribe(
        TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"}
    )
    rule = f"{cluster['name']}-states"
    cluster["events"].put_rule(
        Name=rule,
        EventPattern=json.dumps(
            {
                "source": ["aws.batch"],
                "detail-type": ["Batch Job State Change"],
                "detail": {"jobQueue": [cluster["queue"]]},
            }
        ),
    )
    cluster["events"].put_targets(Rule=rule, Targets=[{"Id": "activity", "Arn": topic}])
    job_id = submit(cluster, num_nodes=2)
    wait_for(cluster["batch"], job_id, ("SUCCEEDED", "FAILED"))
    statuses, deadline = [], time.monotonic() + 20
    while "SUCCEEDED" not in statuses and time.monotonic() < deadline:
        for message in (
            cluster["sqs"]
            .receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            .get("Messages", [])
        ):
            event = json.loads(message["Body"])
            assert event["source"] == "aws.batch" and event["detail-type"] == "Batch Job State Change"
            if event["detail"]["jobId"] == job_id:
                statuses.append(event["detail"]["status"])
    assert statuses == ["PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED"]


def test_a_container_that_cannot_start_fails_the_job_with_the_reason(cluster):
    job = wait_for(cluster["batch"], submit(cluster, ["no-such-program-here"]), ("SUCCEEDED", "FAILED"))
    assert job["status"] == "FAILED" and job["statusReason"].startswith("CannotStartContainerError: ")
    main = cluster["batch"].describe_jobs(jobs=[f"{job['jobId']}#0"])["jobs"][0]
    assert "no-such-program-here" in main["container"]["reason"]


def test_bad_submissions_are_refused_with_the_rule(cluster):
    from botocore.exceptions import ClientError

    for extra, rule in (
        (dict(nodeOverrides={"numNodes": 0}), "numNodes"),
        (dict(arrayProperties={"size": 2}), "array jobs"),
        (dict(retryStrategy={"attempts": 11}), "attempts"),
    ):
        with pytest.raises(ClientError, match=rule):
            cluster["batch"].submit_job(
                jobName="bad", jobQueue=cluster["queue"], jobDefinition=cluster["definition"], **extra
            )
    with pytest.raises(ClientError, match="jobName must be"):  # `$` let a trailing newline through
        cluster["batch"].submit_job(jobName="bad\n", jobQueue=cluster["queue"], jobDefinition=cluster["definition"])
