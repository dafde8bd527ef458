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
  recorded, so that the next start ends whatever is still left (mlscale.emulator.sessions).
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

    def start(self) -> None:
        dies_with_parent = sessions.dies_with_parent()
        for name, args in commands(self.port).items():
            with open(self.log_dir / f"{name}.log", "ab") as log:
                module = "mlscale.local_scheduler" if name == "scheduler" else "airflow"
                self.processes[name] = subprocess.Popen([sys.executable, "-m", module, *args], env=self.env,
                                                        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                        start_new_session=True, preexec_fn=dies_with_parent)  # fmt: skip
            sessions.record(self.sessions_dir, self.processes[name].pid)

    def exited(self) -> str | None:
        """The first component that has exited, with its code; None while all run."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                return f"{name} (exit code {process.returncode}; see {self.log_dir / f'{name}.log'})"
        return None

    def wait(self) -> int:
        """Until a component exits (an Airflow component exits only on an error or a signal)."""
        while (gone := self.exited()) is None:
            time.sleep(1)
        print(f"Airflow's {gone} stopped; stopping the others.", flush=True)
        return 1

    def stop(self, grace: float = 30) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes.values():
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)  # what is left, the executor's workers included
            except ProcessLookupError:
                pass
            process.wait()
            sessions.forget(self.sessions_dir, process.pid)
