"""Airflow on this machine against the local emulator: its environment, the training pool, `mlscale airflow`.

`mlscale airflow` is `airflow standalone` (scheduler, triggerer, dag processor, API server; LocalExecutor on
SQLite) with mlscale's DAGs and plugin, an `aws_default` connection that points at the emulator, and the
training pool. It prints the URL and the login, and stops Airflow and the emulator on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

TRAINING_POOL_SLOTS = int(os.environ.get("MLSCALE_TRAINING_POOL_SLOTS", "1"))


def state_dir(repo: Path) -> Path:
    """Where Airflow's home and the emulator's files live (MLSCALE_HOME, default .mlscale/)."""
    return Path(os.environ.get("MLSCALE_HOME", repo / ".mlscale")).resolve()


def emulator_settings(repo: Path):
    """The emulator `mlscale airflow` and `mlscale demo` use: MLSCALE_EMULATOR_HOME, else <state dir>/emulator."""
    from mlscale.emulator.settings import EmulatorSettings

    return EmulatorSettings.from_env(home=os.environ.get("MLSCALE_EMULATOR_HOME") or str(state_dir(repo) / "emulator"))


def airflow_environment(repo: Path, connection_uri: str) -> dict[str, str]:
    """A private Airflow home whose aws_default connection points at the emulator."""
    home = state_dir(repo) / "airflow"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(repo / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(repo / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "AIRFLOW_CONN_AWS_DEFAULT": connection_uri,
        "AWS_DEFAULT_REGION": "us-east-1",
        # `airflow standalone` starts its components as `airflow ...` from PATH: this venv's
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def ensure_training_pool(slots: int = TRAINING_POOL_SLOTS) -> None:
    """The pool that bounds concurrent training jobs (Airflow must be configured by the environment).

    Deferred tasks count: a training task waits for its job in the triggerer, and the job still holds the quota.
    """
    from airflow.models.pool import Pool

    from mlscale.settings import setting

    name = setting("training_pool")
    Pool.create_or_update_pool(name, slots, "SageMaker training jobs at once (account quotas)", include_deferred=True)


def login(home: Path) -> tuple[str, str]:
    """The admin login of Airflow's simple auth manager, created once per Airflow home."""
    password_file = home / "simple_auth_manager_passwords.json.generated"
    if not password_file.exists():
        password_file.write_text(json.dumps({"admin": secrets.token_urlsafe(12)}) + "\n")
    return "admin", json.loads(password_file.read_text())["admin"]


def wait_until_healthy(url: str, process: subprocess.Popen, timeout: float = 300) -> None:
    """Until the API server answers and reports the scheduler, triggerer and dag processor healthy."""
    deadline = time.monotonic() + timeout
    components = ("metadatabase", "scheduler", "triggerer", "dag_processor")
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"airflow standalone exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
                health = json.load(response)
            if all((health.get(c) or {}).get("status") == "healthy" for c in components):
                return
        except OSError:
            pass
        time.sleep(2)
    raise TimeoutError(f"Airflow at {url} was not healthy after {timeout:.0f} s")


def main(port: int = 8080) -> int:
    """Start the emulator and Airflow standalone; print the URL and login; stop both on Ctrl-C or SIGTERM."""
    from mlscale.emulator import control
    from mlscale.emulator.executors.processes import free_port

    repo = Path(os.environ.get("MLSCALE_REPO", Path.cwd())).resolve()
    config = emulator_settings(repo)
    url = f"http://localhost:{port}"
    started = control.ensure_up(config)  # a running emulator is reused, and left running
    airflow = None
    try:
        control.provision_edge_fleet(config)
        env = {**os.environ, **airflow_environment(repo, control.connection_uri(config)),
               "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__BASE_URL": url,
               # the scheduler's and triggerer's log servers default to 8793/8794: any free ports will do
               "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
               "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port())}  # fmt: skip
        os.environ.update(env)
        home = Path(env["AIRFLOW_HOME"])
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        ensure_training_pool()
        user, password = login(home)
        log_path = home / "standalone.log"
        with open(log_path, "ab") as log:
            # its own session: Ctrl-C in this terminal reaches only us, and we stop it in order
            airflow = subprocess.Popen([sys.executable, "-m", "airflow", "standalone"], env=env, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       preexec_fn=_sigint_stops_it)  # fmt: skip
        signal.signal(signal.SIGTERM, _interrupt)
        print(f"Starting Airflow (logs: {log_path}) ...", flush=True)
        wait_until_healthy(url, airflow)
        print(f"Airflow is ready: {url}  login: {user} / {password}", flush=True)
        print(f"The emulator answers at {config.endpoint_url}. Ctrl-C stops both.", flush=True)
        return airflow.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
        if airflow is not None:
            stop(airflow)
        if started:
            control.down(config)


def _sigint_stops_it() -> None:
    """Started from a background shell we inherit SIGINT ignored, and standalone would not hear stop()."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def stop(process: subprocess.Popen, grace: float = 30) -> None:
    """SIGINT is how `airflow standalone` shuts its components down; then the whole group, to be sure."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
