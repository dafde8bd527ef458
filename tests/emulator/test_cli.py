"""`mlscale emulator up|status|down` as a user runs them."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.emulator


def mlscale(*args, env):
    return subprocess.run([sys.executable, "-m", "mlscale.cli", *args], env=env, capture_output=True, text=True)


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
    finally:
        assert "stopped" in mlscale("emulator", "down", env=env).stdout
    assert mlscale("emulator", "status", env=env).returncode == 1
    assert "was not running" in mlscale("emulator", "down", env=env).stdout
