"""Start, stop and probe the emulator as a background process (what `mlscale emulator` does)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

from mlscale_emulator import job_env
from mlscale_emulator.settings import EmulatorSettings


def is_ready(config: EmulatorSettings, timeout: float = 2.0) -> bool:
    """Ready when moto's server answers its own API on the port."""
    try:
        with urllib.request.urlopen(f"{config.endpoint_url}/moto-api/data.json", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


BUSY_SERVER_SECONDS = 60.0


def answers_within(config: EmulatorSettings, seconds: float) -> bool:
    """Whether the server answers within `seconds` (a busy server, restoring endpoints on a loaded machine,
    can take longer than one request's timeout)."""
    deadline = time.monotonic() + seconds
    while not is_ready(config):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _pid_file(config: EmulatorSettings):
    return config.home / "emulator.pid"


def running_pid(config: EmulatorSettings) -> int | None:
    path = _pid_file(config)
    if not path.exists():
        return None
    pid = int(path.read_text().strip() or 0)
    if not pid or not _alive(pid):
        path.unlink(missing_ok=True)
        return None
    return pid


def _alive(pid: int) -> bool:
    """Running, and not a zombie: an exited server whose parent (e.g. `mlscale airflow`) has not reaped it yet
    still answers kill(pid, 0), and waiting for it to go away took until the timeout."""
    import psutil

    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # this process started it: reap it
            return False
    except ChildProcessError:
        pass
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def ensure_up(config: EmulatorSettings) -> bool:
    """Start the server unless it already runs; True when this call started it (and should stop it)."""
    if running_pid(config) and answers_within(config, BUSY_SERVER_SECONDS):
        return False
    up(config)
    return True


def up(config: EmulatorSettings, wait_seconds: float = 60) -> int:
    """Start the server in the background unless it already runs; return its pid."""
    pid = running_pid(config)
    if pid and answers_within(config, wait_seconds):  # running, perhaps busy: never a second server on the port
        return pid
    if is_ready(config):
        raise RuntimeError(
            f"port {config.port} already answers, but not for an emulator with home {config.home}: "
            "another emulator (another MLSCALE_EMULATOR_HOME) or moto server runs there; stop it, "
            "or choose another port with MLSCALE_EMULATOR_PORT"
        )
    config.home.mkdir(parents=True, exist_ok=True)
    log_file = open(config.home / "emulator.log", "ab")
    # the server gets an allow-list of this process's environment: nothing it passes to a job can be a secret
    env = job_env.for_server(MLSCALE_EMULATOR_PORT=str(config.port), MLSCALE_EMULATOR_HOME=str(config.home))
    process = subprocess.Popen(
        [sys.executable, "-m", "mlscale_emulator", "serve"],
        stdout=log_file,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    _pid_file(config).write_text(str(process.pid))
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the emulator exited with {process.returncode}; see {config.home / 'emulator.log'}")
        if is_ready(config):
            return process.pid
        time.sleep(0.2)
    down(config)
    raise RuntimeError(f"the emulator did not answer within {wait_seconds:.0f} s")


def down(config: EmulatorSettings, wait_seconds: float = 60) -> bool:
    """Stop the background server (it saves its state, then stops its running jobs); False if none ran."""
    pid = running_pid(config)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            break
        time.sleep(0.2)
    else:
        os.killpg(pid, signal.SIGKILL)
    _pid_file(config).unlink(missing_ok=True)
    return True


def reset(config: EmulatorSettings) -> bool:
    """Wipe every resource, object and job file on purpose (moto's reset on a running server); True if one ran."""
    from mlscale_emulator.state import forget

    pid = running_pid(config)
    if pid:  # never forget the files under a running server: it would save them again on down
        if not answers_within(config, BUSY_SERVER_SECONDS):
            raise RuntimeError(
                f"the emulator (pid {pid}) does not answer on {config.endpoint_url}: stop it "
                "(`mlscale emulator down`) and reset again"
            )
        request = urllib.request.Request(f"{config.endpoint_url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=120):
            return True
    forget(config.home)
    return False


def status(config: EmulatorSettings) -> dict:
    return {
        "endpoint_url": config.endpoint_url,
        "pid": running_pid(config),
        "ready": is_ready(config),
        "home": str(config.home),
    }


def connection_uri(config: EmulatorSettings, region: str = "us-east-1") -> str:
    """The Airflow AWS connection (JSON form) that points the same DAG at the emulator."""
    return json.dumps(
        {
            "conn_type": "aws",
            "login": "testing",
            "password": "testing",
            "extra": {"endpoint_url": config.endpoint_url, "region_name": region},
        }
    )


def client(config: EmulatorSettings, service: str, region: str = "us-east-1"):
    """A boto3 client of the emulator at `config` (test credentials: the emulator checks none)."""
    import boto3

    return boto3.client(
        service,
        endpoint_url=config.endpoint_url,
        region_name=region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def provision_edge_fleet(
    config: EmulatorSettings,
    group: str = "mlscale-edge-fleet",
    count: int = 3,
    architecture: str = "amd64",
    region: str = "us-east-1",
) -> list[str]:
    """Register simulated Greengrass core devices: IoT things (greengrass=core) in a thing group.

    On AWS, devices register themselves when their nucleus starts; on the
    emulator this is that step. Idempotent.
    """
    iot = client(config, "iot", region)
    try:
        iot.create_thing_group(thingGroupName=group)
    except iot.exceptions.ResourceAlreadyExistsException:
        pass  # a running emulator keeps its fleet: `mlscale airflow` or `demo` started again
    names = []
    for index in range(1, count + 1):
        name = f"{group}-device-{index}"
        attributes = {"greengrass": "core", "os": "linux", "architecture": architecture}
        try:
            iot.create_thing(thingName=name, attributePayload={"attributes": attributes})
        except iot.exceptions.ResourceAlreadyExistsException:
            pass
        iot.add_thing_to_thing_group(thingGroupName=group, thingName=name)
        names.append(name)
    return names
