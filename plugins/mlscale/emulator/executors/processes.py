"""Process helpers shared by the executors."""

from __future__ import annotations

import os
import signal
import socket
import subprocess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process_group(process: subprocess.Popen, grace_seconds: float) -> None:
    """SIGTERM the process's group, SIGKILL it after the grace period, as SageMaker stops a container."""
    if process.poll() is not None:
        _kill_group(process, signal.SIGKILL)  # orphans a finished leader left behind
        return
    _kill_group(process, signal.SIGTERM)
    try:
        process.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGKILL)
        process.wait()


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
