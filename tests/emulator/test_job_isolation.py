"""What a job's processes can see of the user's machine: no secret of the caller's environment, and nothing they
listen on is reachable from another address."""

from __future__ import annotations

import os
import time
from pathlib import Path

import boto3
import psutil
import pytest

from tests.conftest import free_port, training_request, upload_source, wait_for_job

pytestmark = pytest.mark.emulator
SECRETS = {
    "AIRFLOW_CONN_PROBE": "aws://AKIAPROBE:conn-secret-4711@/?region_name=eu-west-1",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-4711",
    "AWS_SESSION_TOKEN": "token-4711",
}

SCRIPT = """
import os, time, torch.distributed as dist
dist.init_process_group("gloo")
open(os.path.join(os.environ["SM_HP_READY_DIR"], f"ready-{dist.get_rank()}"), "w").close()
while not os.path.exists(os.path.join(os.environ["SM_HP_READY_DIR"], "release")):
    time.sleep(0.1)
dist.barrier()
"""


@pytest.fixture(scope="module")
def emulator_with_secrets(tmp_path_factory):
    """An emulator started from a shell that holds an Airflow connection and AWS secrets."""
    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    config = EmulatorSettings(host="127.0.0.1", port=free_port(), home=tmp_path_factory.mktemp("secrets-home"))
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)
    try:
        pid = control.up(config)
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    yield config, pid
    control.down(config)


def test_a_distributed_job_sees_no_secret_and_listens_only_on_loopback(emulator_with_secrets, tmp_path):
    config, server_pid = emulator_with_secrets

    def client(service):
        return boto3.client(
            service,
            endpoint_url=config.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    s3, sagemaker = client("s3"), client("sagemaker")
    s3.create_bucket(Bucket="mlscale-test")
    source = upload_source(s3, {"train.py": SCRIPT}, "code/isolation/sourcedir.tar.gz")
    sagemaker.create_training_job(
        **training_request(
            "isolated", source, instance_count=2, distributed=True, hyperparameters={"ready_dir": str(tmp_path)}
        )
    )
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{rank}").exists() for rank in (0, 1)):
        assert time.monotonic() < deadline, wait_for_job(sagemaker, "isolated", timeout=1)
        time.sleep(0.2)

    server = psutil.Process(server_pid)
    tree = [server, *server.children(recursive=True)]
    assert len(tree) >= 5  # the server, two torchrun agents and their two workers (at least)
    for process in tree:
        environment = Path(f"/proc/{process.pid}/environ").read_bytes().decode(errors="replace")
        for name, secret in SECRETS.items():
            assert secret not in environment, f"{name}'s value reached pid {process.pid}: {process.cmdline()[:4]}"
    listening = [(p.pid, c.laddr) for p in tree for c in p.net_connections(kind="inet") if c.status == "LISTEN"]
    assert any(address.ip == "127.0.0.1" for _, address in listening)  # the rendezvous store, gloo, the server
    assert all(address.ip in ("127.0.0.1", "::1") for _, address in listening), listening

    (tmp_path / "release").touch()
    job = wait_for_job(sagemaker, "isolated", timeout=120)
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")


def test_every_job_environment_is_an_allow_list(monkeypatch):
    from mlscale_emulator import job_env

    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-4711")
    for env in (job_env.base(), job_env.for_job("us-east-1", "http://127.0.0.1:5055"), job_env.for_server()):
        assert not {"AIRFLOW_CONN_PROBE", "AWS_SESSION_TOKEN", "GITHUB_TOKEN"} & set(env)
        assert "4711" not in "".join(env.values())
    assert job_env.for_job("us-east-1", "http://127.0.0.1:5055")["AWS_SECRET_ACCESS_KEY"] == job_env.DUMMY_KEY
