"""`mlscale emulator up|status|down` as a user runs them."""

import json
import os
import subprocess
import sys

import boto3
import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.emulator


def mlscale(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "mlscale_emulator.cli", *args], env=env, capture_output=True, text=True
    )


def test_up_status_down_are_idempotent(tmp_path):
    env = {**os.environ, "MLSCALE_EMULATOR_PORT": str(free_port()), "MLSCALE_EMULATOR_HOME": str(tmp_path)}
    assert mlscale("emulator", "status", env=env).returncode == 1
    first = mlscale("emulator", "up", env=env)
    try:
        assert first.returncode == 0, first.stderr
        again = mlscale("emulator", "up", env=env)  # already up: same server, no second one
        assert again.returncode == 0 and again.stdout == first.stdout
        status = json.loads(mlscale("emulator", "status", env=env).stdout)
        assert status["ready"] is True and status["endpoint_url"].startswith("http://127.0.0.1:")
        connection = json.loads(mlscale("emulator", "connection", env=env).stdout)
        assert connection["extra"]["endpoint_url"] == status["endpoint_url"]
        for _ in range(2):  # what `mlscale airflow` and the compose file's init run; idempotent
            arrivals = mlscale("emulator", "arrivals", env={**env, "AIRFLOW__MLSCALE_EXAMPLE__BUCKET": "cli-arrivals"})
            assert arrivals.returncode == 0, arrivals.stderr
        assert arrivals.stdout.strip().endswith("arn:aws:sqs:us-east-1:123456789012:mlscale-raw-arrivals")
        s3 = boto3.client(
            "s3",
            endpoint_url=status["endpoint_url"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        (queue,) = s3.get_bucket_notification_configuration(Bucket="cli-arrivals")["QueueConfigurations"]
        (rule,) = queue["Filter"]["Key"]["FilterRules"]  # S3 answers "Prefix", moto "prefix"
        assert rule["Name"].lower() == "prefix" and rule["Value"] == "mlscale/raw/_arrivals/"
    finally:
        assert "stopped" in mlscale("emulator", "down", env=env).stdout
    assert mlscale("emulator", "status", env=env).returncode == 1
    assert "was not running" in mlscale("emulator", "down", env=env).stdout


def test_an_emulator_with_another_home_on_the_port_is_named_not_a_traceback(tmp_path):
    port = str(free_port())
    first = {**os.environ, "MLSCALE_EMULATOR_PORT": port, "MLSCALE_EMULATOR_HOME": str(tmp_path / "a")}
    other = {**first, "MLSCALE_EMULATOR_HOME": str(tmp_path / "b")}
    assert mlscale("emulator", "up", env=first).returncode == 0
    try:
        clash = mlscale("emulator", "up", env=other)
        assert clash.returncode == 1 and "Traceback" not in clash.stderr
        assert f"port {port} already answers" in clash.stderr and "MLSCALE_EMULATOR_HOME" in clash.stderr
    finally:
        mlscale("emulator", "down", env=first)


def test_down_returns_at_once_when_the_server_is_a_zombie_of_another_process(tmp_path):
    """`mlscale airflow` starts the server as its child; `emulator down` from another shell must not wait for
    the parent to reap it."""
    import time

    env = {**os.environ, "MLSCALE_EMULATOR_PORT": str(free_port()), "MLSCALE_EMULATOR_HOME": str(tmp_path)}
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from mlscale_emulator import control, settings; import time; "
            "control.up(settings.EmulatorSettings.from_env()); time.sleep(600)",
        ],
        env=env,
    )
    try:
        for _ in range(300):
            if mlscale("emulator", "status", env=env).returncode == 0:
                break
            time.sleep(0.2)
        started = time.monotonic()
        assert "stopped" in mlscale("emulator", "down", env=env).stdout
        assert time.monotonic() - started < 30  # the exited server stays a zombie until its parent reaps it
    finally:
        parent.kill()
        parent.wait()
