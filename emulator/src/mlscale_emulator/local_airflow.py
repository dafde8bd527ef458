"""Airflow on this machine against the local emulator: its environment, the training pool, `mlscale airflow`.

`mlscale airflow` runs Airflow's scheduler, triggerer, dag processor and API server (LocalExecutor, or with
`--executor celery` Celery workers on a Redis broker; on a PostgreSQL server of its own:
mlscale_emulator.local_database; every listener on 127.0.0.1: mlscale_emulator.local_components)
with mlscale's DAGs and plugin, an `aws_default` connection that points at the emulator, and the training
pool. It prints the URL and the login, and stops Airflow, the database and the emulator on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def state_dir(repo: Path) -> Path:
    """Where Airflow's home and the emulator's files live (MLSCALE_HOME, default .mlscale/)."""
    return Path(os.environ.get("MLSCALE_HOME", repo / ".mlscale")).resolve()


def emulator_settings(repo: Path):
    """The emulator `mlscale airflow` and `mlscale demo` use: MLSCALE_EMULATOR_HOME, else <state dir>/emulator."""
    from mlscale_emulator.settings import EmulatorSettings

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
        # whatever Airflow starts as `airflow ...` (task processes, the demo's `db migrate`) is this venv's
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def login(home: Path) -> tuple[str, str]:
    """The admin login of Airflow's simple auth manager, created once per Airflow home."""
    password_file = home / "simple_auth_manager_passwords.json.generated"
    if not password_file.exists():
        password_file.write_text(json.dumps({"admin": secrets.token_urlsafe(12)}) + "\n")
    return "admin", json.loads(password_file.read_text())["admin"]


def wait_until_healthy(url: str, components, timeout: float = 300) -> None:
    """Until the API server answers and reports the scheduler, triggerer and dag processor healthy."""
    deadline = time.monotonic() + timeout
    checked = ("metadatabase", "scheduler", "triggerer", "dag_processor")
    while time.monotonic() < deadline:
        if gone := components.exited():
            raise RuntimeError(f"Airflow's {gone} exited while starting")
        try:
            with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=5) as response:
                health = json.load(response)
            if all((health.get(c) or {}).get("status") == "healthy" for c in checked):
                return
        except OSError:
            pass
        time.sleep(2)
    raise TimeoutError(f"Airflow at {url} was not healthy after {timeout:.0f} s")


def main(port: int = 8080, workers: int = 0) -> int:
    """Start the emulator, PostgreSQL and Airflow's components; print the URL and login; stop all on Ctrl-C/SIGTERM.
    `workers`: the CeleryExecutor with that many workers and a Redis broker; 0: the LocalExecutor."""
    from mlscale_emulator import control, local_database, local_project
    from mlscale_emulator.local_components import Components

    # raise KeyboardInterrupt on both, also when started from a script or a background shell, which starts
    # us with SIGINT ignored (Python then installs no handler of its own)
    if workers and shutil.which("redis-server") is None:
        raise RuntimeError(
            "--executor celery needs Redis's server as its broker: install Debian's redis-server "
            "(apt-get install redis-server), or run without --executor celery"
        )
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    project = local_project.load()
    repo = Path(os.environ.get("MLSCALE_REPO", Path.cwd())).resolve()
    config = emulator_settings(repo)
    url = f"http://localhost:{port}"
    database = state_dir(repo) / "postgres"
    started = False
    components = None
    run_file = state_dir(repo) / "airflow" / RUN_FILE
    claim_stack(run_file, database, config)  # refuses a running stack; ends what a killed one left
    try:
        started = control.ensure_up(config)  # a running emulator is reused, and left running
        record_run(run_file, emulator_started=started)
        control.provision_edge_fleet(config)
        env = {**os.environ, **airflow_environment(repo, control.connection_uri(config)), "AIRFLOW__API__BASE_URL": url}
        home = Path(env["AIRFLOW_HOME"])
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = uri = local_database.start(database)
        os.environ.update(env)
        # the first command on a new home writes its airflow.cfg, with the secrets the components share
        subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True, stdout=subprocess.DEVNULL
        )
        local_database.set_in_airflow_cfg(home, uri)  # `airflow ...` on this home (a backfill) finds it too
        project.prepare_airflow()
        project.provision(lambda service: control.client(config, service))  # before the triggerer starts
        user, password = login(home)
        from mlscale_emulator.executors.processes import free_port

        env.update(project.airflow_environment())  # the project's settings for jobs that take seconds
        components = Components(env, home, port, workers=workers, broker_port=free_port() if workers else 0)
        components.start()
        print(f"Starting Airflow (logs: {home}/<component>.log) ...", flush=True)
        wait_until_healthy(url, components)
        print(f"Airflow is ready: {url}  login: {user} / {password}", flush=True)
        print(f"The emulator answers at {config.endpoint_url}. Ctrl-C stops both.", flush=True)
        return components.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if components is not None:
            components.stop()
        local_database.stop(database)
        if started:
            control.down(config)
        run_file.unlink(missing_ok=True)


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


RUN_FILE = "mlscale-airflow.json"  # this stack's pid and start time, and whether it started the emulator


def record_run(run_file: Path, emulator_started: bool) -> None:
    from mlscale_emulator import sessions

    run_file.parent.mkdir(parents=True, exist_ok=True)
    run_file.write_text(
        json.dumps(
            {"pid": os.getpid(), "started": sessions.start_time(os.getpid()), "emulator_started": emulator_started}
        )
    )


def claim_stack(run_file: Path, database: Path, config) -> None:
    """Before starting: refuse if another `mlscale airflow` runs on this state folder; if the last one was killed
    (its run file outlived it), end its components, its PostgreSQL and the emulator it started, and say so."""
    from mlscale_emulator import control, local_database, sessions

    try:
        previous = json.loads(run_file.read_text())
    except (OSError, ValueError):
        previous = None
    if (
        previous
        and previous.get("pid") != os.getpid()
        and previous.get("started") is not None
        and sessions.start_time(previous["pid"]) == previous["started"]
    ):
        raise RuntimeError(
            f"mlscale airflow already runs on {run_file.parent.parent} (pid {previous['pid']}): "
            f"stop it first (Ctrl-C in its terminal, or kill {previous['pid']})"
        )
    ended = sessions.end_leftovers(run_file.parent / "sessions")
    if previous is None:
        return
    local_database.stop(database)
    if previous.get("emulator_started"):
        control.down(config)
    print(
        f"A previous mlscale airflow (pid {previous['pid']}) was killed; stopped what it left: its PostgreSQL"
        f"{', its emulator' if previous.get('emulator_started') else ''} and "
        f"{len(ended)} Airflow processes{' (' + ', '.join(map(str, ended)) + ')' if ended else ''}.",
        flush=True,
    )
    run_file.unlink(missing_ok=True)
