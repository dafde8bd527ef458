"""Airflow's four components for the local stack, started the way `airflow standalone` starts them, but:

- every listener on 127.0.0.1: the API server binds there, and the scheduler and triggerer run with
  `--skip-serve-logs` (their log servers bind every interface, and on one machine the API server reads the
  task and trigger log files directly);
- LocalExecutor and the simple auth manager, as standalone forces them; or (`--executor celery --workers N`)
  the CeleryExecutor, N workers and Debian's redis-server as the broker (the layout of docker-compose.yaml);
- the scheduler with the fix for apache/airflow#72716 (mlscale_emulator.local_scheduler), so the stage triggers need
  not hold their first event;
- each in its own session, so a Ctrl-C in the terminal reaches `mlscale airflow` only, which stops them in
  order (SIGTERM, their graceful shutdown; SIGKILL for what is left after the grace period);
- each gets SIGTERM if `mlscale airflow` dies without stopping them (PR_SET_PDEATHSIG), and its session is
  recorded, so that the next start ends whatever is still left (mlscale_emulator.sessions);
- a component that dies is started again, as a process supervisor would (systemd's Restart=on-failure with
  a growing RestartSec): after RESTART_DELAYS, and it has run HEALTHY_SECONDS once up again. The runs go on:
  a deferred task's trigger is picked up by the new triggerer, a running task's heartbeat by the new
  scheduler. Only a component that keeps dying (RESTART_LIMIT starts within RESTART_WINDOW) stops the stack.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mlscale_emulator import sessions

SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
RESTART_DELAYS = (1, 2, 5, 10, 30)  # seconds before the 1st, 2nd, ... restart in a row
HEALTHY_SECONDS = 60  # up this long, a component's next restart starts from the first delay again
RESTART_LIMIT, RESTART_WINDOW = 5, 300  # this many restarts of one component within this many seconds: give up


def commands(port: int, workers: int = 0, broker_port: int = 0, broker_dir: Path | None = None) -> dict[str, list[str]]:
    """Each component's command; with `workers`, a Redis broker and that many Celery workers besides."""
    airflow = [sys.executable, "-m", "airflow"]
    found = {
        "scheduler": [sys.executable, "-m", "mlscale_emulator.local_scheduler", "scheduler", "--skip-serve-logs"],
        "dag-processor": [*airflow, "dag-processor"],
        "triggerer": [*airflow, "triggerer", "--skip-serve-logs"],
        "api-server": [*airflow, "api-server", "--host", "127.0.0.1", "--port", str(port)],
    }
    if not workers:
        return found
    # the broker keeps its queue in an append-only file: a Redis that dies and starts again loses no task
    broker = [
        "redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        str(broker_port),
        "--protected-mode",
        "yes",
        "--appendonly",
        "yes",
        "--save",
        "",
        "--dir",
        str(broker_dir),
    ]
    return {
        "redis": broker,
        **found,
        **{
            f"worker-{n}": [*airflow, "celery", "worker", "--celery-hostname", f"worker-{n}@%h", "--skip-serve-logs"]
            for n in range(1, workers + 1)
        },
    }


class Components:
    """`workers` 0: the LocalExecutor; else the CeleryExecutor with that many workers on a Redis broker at
    `broker_port`, its results in Airflow's own database."""

    def __init__(self, env: dict[str, str], log_dir: Path, port: int, workers: int = 0, broker_port: int = 0):
        self.env = {
            **env,
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
            "AIRFLOW__MLSCALE__FIRST_EVENT_DELAY": "0",
            # a task whose worker died is failed (and retried) after a minute, not five
            "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": env.get(
                "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT", "60"
            ),
        }
        if workers:
            self.env.update(
                {
                    "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
                    "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:{broker_port}/0",
                    "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + env.get("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", ""),
                    "AIRFLOW__CELERY__WORKER_CONCURRENCY": "8",
                }
            )
        self.log_dir, self.port, self.workers, self.broker_port = log_dir, port, workers, broker_port
        self.sessions_dir = log_dir / "sessions"  # what a killed `mlscale airflow` leaves, its next start ends
        self.processes: dict[str, subprocess.Popen] = {}
        self.started_at: dict[str, float] = {}
        self.restarts: dict[str, list[float]] = {}  # name -> when it was restarted
        self.left: list[subprocess.Popen] = []  # a restarted scheduler's session, its tasks still finishing

    def _commands(self) -> dict[str, list[str]]:
        return commands(self.port, self.workers, self.broker_port, self.log_dir / "redis")

    def start(self) -> None:
        if self.workers:
            (self.log_dir / "redis").mkdir(exist_ok=True)
        for name in self._commands():
            self._start(name)

    def _start(self, name: str) -> None:
        with open(self.log_dir / f"{name}.log", "ab") as log:
            self.processes[name] = subprocess.Popen(
                self._commands()[name],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=sessions.dies_with_parent(),
            )
        self.started_at[name] = time.monotonic()
        sessions.record(self.sessions_dir, self.processes[name].pid)

    def exited(self) -> str | None:
        """The first component that has exited, with its code; None while all run."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                return f"{name} (exit code {process.returncode}; see {self.log_dir / f'{name}.log'})"
        return None

    def wait(self) -> int:
        """Supervise: restart a component that exits (an Airflow component exits only on an error or a signal)
        after a growing delay; return 1 when one keeps dying."""
        while True:
            time.sleep(1)
            for name, process in list(self.processes.items()):
                if process.poll() is None:
                    continue
                gone = f"{name} (exit code {process.returncode}; see {self.log_dir / f'{name}.log'})"
                delay = self.restart_delay(name, time.monotonic())
                if delay is None:
                    print(
                        f"Airflow's {gone} stopped {RESTART_LIMIT} times within {RESTART_WINDOW} s; stopping "
                        "the others.",
                        flush=True,
                    )
                    return 1
                print(f"Airflow's {gone} stopped; starting it again in {delay} s.", flush=True)
                if name == "scheduler" and not self.workers:  # its LocalExecutor workers finish their tasks
                    self.left.append(process)
                else:  # a triggerer's runner, a server's workers: nothing of theirs outlives them
                    self._end(process)
                time.sleep(delay)
                self._start(name)

    def restart_delay(self, name: str, now: float) -> int | None:
        """Seconds to wait before restarting `name`, which just exited; None: it keeps dying, give up."""
        recent = [t for t in self.restarts.get(name, []) if now - t < RESTART_WINDOW]
        if now - self.started_at.get(name, now) >= HEALTHY_SECONDS:
            recent = []  # it ran well since its last restart: a first failure again
        if len(recent) >= RESTART_LIMIT:
            return None
        self.restarts[name] = [*recent, now]
        return RESTART_DELAYS[min(len(recent), len(RESTART_DELAYS) - 1)]

    def _end(self, process: subprocess.Popen) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        sessions.forget(self.sessions_dir, process.pid)

    def stop(self, grace: float = 30) -> None:
        for process in self.left:
            self._end(process)
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            self._end(process)  # what is left, the executor's workers included
