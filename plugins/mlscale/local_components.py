"""Airflow's four components for the local stack, started the way `airflow standalone` starts them, but:

- every listener on 127.0.0.1: the API server binds there, and the scheduler and triggerer run with
  `--skip-serve-logs` (their log servers bind every interface, and on one machine the API server reads the
  task and trigger log files directly);
- LocalExecutor and the simple auth manager, as standalone forces them;
- the scheduler with the fix for apache/airflow#72716 (mlscale.local_scheduler), so the stage triggers need
  not hold their first event;
- each in its own session, so a Ctrl-C in the terminal reaches `mlscale airflow` only, which stops them in
  order (SIGTERM, their graceful shutdown; SIGKILL for what is left after the grace period);
- each gets SIGTERM if `mlscale airflow` dies without stopping them (PR_SET_PDEATHSIG), and its session is
  recorded, so that the next start ends whatever is still left (mlscale.emulator.sessions);
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

from mlscale.emulator import sessions

SIMPLE_AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
RESTART_DELAYS = (1, 2, 5, 10, 30)  # seconds before the 1st, 2nd, ... restart in a row
HEALTHY_SECONDS = 60  # up this long, a component's next restart starts from the first delay again
RESTART_LIMIT, RESTART_WINDOW = 5, 300  # this many restarts of one component within this many seconds: give up


def commands(port: int) -> dict[str, list[str]]:
    return {
        "scheduler": ["scheduler", "--skip-serve-logs"],
        "dag-processor": ["dag-processor"],
        "triggerer": ["triggerer", "--skip-serve-logs"],
        "api-server": ["api-server", "--host", "127.0.0.1", "--port", str(port)],
    }


class Components:
    def __init__(self, env: dict[str, str], log_dir: Path, port: int):
        self.env = {**env, "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
                    "AIRFLOW__MLSCALE__FIRST_EVENT_DELAY": "0", "AIRFLOW__MLSCALE__POLL_INTERVAL": "2"}  # fmt: skip
        self.log_dir, self.port = log_dir, port
        self.sessions_dir = log_dir / "sessions"  # what a killed `mlscale airflow` leaves, its next start ends
        self.processes: dict[str, subprocess.Popen] = {}
        self.started_at: dict[str, float] = {}
        self.restarts: dict[str, list[float]] = {}  # name -> when it was restarted
        self.left: list[subprocess.Popen] = []  # a restarted scheduler's session, its tasks still finishing

    def start(self) -> None:
        for name in commands(self.port):
            self._start(name)

    def _start(self, name: str) -> None:
        args = commands(self.port)[name]
        with open(self.log_dir / f"{name}.log", "ab") as log:
            module = "mlscale.local_scheduler" if name == "scheduler" else "airflow"
            self.processes[name] = subprocess.Popen([sys.executable, "-m", module, *args], env=self.env,
                                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                    start_new_session=True,
                                                    preexec_fn=sessions.dies_with_parent())  # fmt: skip
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
                    print(f"Airflow's {gone} stopped {RESTART_LIMIT} times within {RESTART_WINDOW} s; stopping "
                          "the others.", flush=True)  # fmt: skip
                    return 1
                print(f"Airflow's {gone} stopped; starting it again in {delay} s.", flush=True)
                if name == "scheduler":  # its LocalExecutor workers finish the tasks they run; ended at stop
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
