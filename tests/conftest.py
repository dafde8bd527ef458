"""Shared fixtures: an emulator server for the session, and AWS clients pointed at it."""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TRAINING_DIR = REPO / "include" / "training"
ROLE_ARN = "arn:aws:iam::123456789012:role/mlscale-test"

# Airflow reads its configuration at import: give the tests a private home first.
os.environ.setdefault("AIRFLOW_HOME", str(REPO / ".mlscale" / "test-airflow"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "True")
for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
    os.environ.pop(key, None)
os.environ.update(
    {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pytest_collection_modifyitems(config, items):
    """An SDK test in the session: build its SDK's venv in the background while the tests before it run."""
    from tests.sdk import venvs

    for name, venv in venvs.ALL.items():
        if any(item.nodeid.startswith(f"tests/sdk/test_sdk_{name}") for item in items):
            venv.start()  # builds now; the first SDK test runs the clients


@pytest.fixture(scope="session")
def emulator(tmp_path_factory):
    """A background emulator server (started the way `mlscale emulator up` starts it)."""
    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    config = EmulatorSettings(host="127.0.0.1", port=free_port(), home=tmp_path_factory.mktemp("emulator"))
    control.up(config)
    os.environ["AIRFLOW_CONN_AWS_DEFAULT"] = control.connection_uri(config)
    yield config
    control.down(config)
    # every resource the whole suite made could be saved (a model that does not pickle would lose them all)
    assert (config.home / "state.pickle").stat().st_size > 0, "the emulator did not save its state on down"


@pytest.fixture(scope="session")
def clients(emulator):
    import boto3

    def client(service: str):
        return boto3.client(service, endpoint_url=emulator.endpoint_url, region_name="us-east-1")

    made = {name: client(name) for name in ("s3", "sagemaker", "logs")}
    made["s3"].create_bucket(Bucket="mlscale-test")
    return made


@pytest.fixture(scope="session")
def digits_data(clients):
    """The digits data staged in the emulator's S3, as the DAG's first task stages it."""
    from mlscale_example.datasets.digits import stage_digits

    return stage_digits(clients["s3"], "mlscale-test", "data/digits")


def upload_source(s3, files: dict[str, str], key: str) -> str:
    """Pack {name: text} as sourcedir.tar.gz in the test bucket; return its URI."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    s3.put_object(Bucket="mlscale-test", Key=key, Body=buffer.getvalue())
    return f"s3://mlscale-test/{key}"


def batch_cluster(endpoint_url: str, name: str, max_vcpus: int, definition_command: list[str]) -> dict:
    """A Batch compute environment (min 0 vCPUs), its queue and a 2-node job definition on the emulator."""
    import boto3

    def client(service):
        return boto3.client(service, endpoint_url=endpoint_url, region_name="us-east-1")

    batch, ec2, iam = client("batch"), client("ec2"), client("iam")
    role = iam.create_role(
        RoleName=name,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "batch.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ],
            }
        ),
    )["Role"]
    profile = iam.create_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Arn"]
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.7.0.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=name, Description="nodes", VpcId=vpc)["GroupId"]
    environment = batch.create_compute_environment(
        computeEnvironmentName=name,
        type="MANAGED",
        state="ENABLED",
        serviceRole=role["Arn"],
        computeResources={
            "type": "EC2",
            "minvCpus": 0,
            "maxvCpus": max_vcpus,
            "instanceTypes": ["c5.large"],
            "subnets": [subnet],
            "securityGroupIds": [group],
            "instanceRole": profile,
        },
    )["computeEnvironmentArn"]
    queue = batch.create_job_queue(
        jobQueueName=name,
        state="ENABLED",
        priority=1,
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": environment}],
    )
    definition = batch.register_job_definition(
        jobDefinitionName=name,
        type="multinode",
        nodeProperties={
            "numNodes": 2,
            "mainNode": 0,
            "nodeRangeProperties": [
                {
                    "targetNodes": "0:",
                    "container": {
                        "image": "python:3.11",
                        "command": definition_command,
                        "environment": [{"name": "GREETING", "value": "from-the-definition"}],
                        "resourceRequirements": [{"type": "VCPU", "value": "2"}, {"type": "MEMORY", "value": "2048"}],
                    },
                }
            ],
        },
    )["jobDefinitionArn"]
    return {
        "batch": batch,
        "logs": client("logs"),
        "sns": client("sns"),
        "sqs": client("sqs"),
        "events": client("events"),
        "queue": queue["jobQueueArn"],
        "definition": definition,
        "name": name,
        "queue_name": name,
        "environment_name": name,
    }


def training_request(
    name: str,
    sourcedir: str,
    *,
    program: str = "train.py",
    instance_count: int = 1,
    hyperparameters: dict | None = None,
    channels: dict | None = None,
    max_runtime: int = 600,
    metrics: dict | None = None,
    distributed: bool = False,
) -> dict:
    """A CreateTrainingJob request as the SageMaker SDK builds it (JSON-encoded hyperparameters)."""
    hps = {k: json.dumps(v) for k, v in (hyperparameters or {}).items()}
    hps.update({"sagemaker_program": json.dumps(program), "sagemaker_submit_directory": json.dumps(sourcedir)})
    if distributed:
        hps["sagemaker_torch_distributed_enabled"] = "true"
    request = {
        "TrainingJobName": name,
        "RoleArn": ROLE_ARN,
        "AlgorithmSpecification": {
            "TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311",
            "TrainingInputMode": "File",
            "MetricDefinitions": [{"Name": n, "Regex": r} for n, r in (metrics or {}).items()],
        },
        "HyperParameters": hps,
        "InputDataConfig": [
            {"ChannelName": c, "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri}}}
            for c, uri in (channels or {}).items()
        ],
        "OutputDataConfig": {"S3OutputPath": "s3://mlscale-test/models"},
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": instance_count, "VolumeSizeInGB": 10},
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
    }
    if not request["InputDataConfig"]:
        del request["InputDataConfig"]  # the API wants none rather than an empty list
    return request


def wait_for_job(sagemaker, name: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        description = sagemaker.describe_training_job(TrainingJobName=name)
        if description["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            return description
        time.sleep(0.5)
    raise TimeoutError(f"{name} still {description['TrainingJobStatus']}")


def job_logs(logs, name: str) -> dict[str, list[str]]:
    """{stream name: messages} of a training job's CloudWatch streams ({} before any job has logged: the log
    group appears with the first line)."""
    try:
        streams = logs.describe_log_streams(logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix=f"{name}/")
    except logs.exceptions.ResourceNotFoundException:
        return {}
    return {
        s["logStreamName"]: [
            e["message"]
            for e in logs.get_log_events(
                logGroupName="/aws/sagemaker/TrainingJobs", logStreamName=s["logStreamName"], startFromHead=True
            )["events"]
        ]
        for s in streams["logStreams"]
    }


def model_tar(files: dict[str, bytes]) -> bytes:
    """A model.tar.gz holding {name: bytes}."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def traced_model(module, *example) -> bytes:
    """A TorchScript model (traced on `example`) as the bytes of model.pt."""
    import torch

    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(module.eval(), example), buffer)
    return buffer.getvalue()


@pytest.fixture
def no_trigger_hold(monkeypatch):
    """Outside a scheduler there is no deferral race to wait out ([mlscale] first_event_delay)."""
    monkeypatch.setenv("AIRFLOW__MLSCALE__FIRST_EVENT_DELAY", "0")


def first_event(trigger) -> dict:
    """Run a trigger as the triggerer does, to its first event; the event's payload."""
    import asyncio

    async def run():
        async for event in trigger.run():
            return event.payload

    return asyncio.run(run())
