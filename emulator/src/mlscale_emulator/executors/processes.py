"""Process helpers shared by the executors."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from mlscale_emulator import sessions


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


shutting_down = threading.Event()  # the server is stopping: no process gets more than SHUTDOWN_GRACE_SECONDS
SHUTDOWN_GRACE_SECONDS = 3


def stop_process_group(process: subprocess.Popen, grace_seconds: float) -> None:
    """SIGTERM the process's group, SIGKILL it after the grace period, as SageMaker stops a container."""
    if shutting_down.is_set():
        grace_seconds = min(grace_seconds, SHUTDOWN_GRACE_SECONDS)
    if process.poll() is not None:
        _kill_group(process, signal.SIGKILL)  # orphans a finished leader left behind
        return
    _kill_group(process, signal.SIGTERM)
    try:
        process.wait(grace_seconds)
    except subprocess.TimeoutExpired:
        _kill_group(process, signal.SIGKILL)
        process.wait()


def wait_briefly(processes, seconds: float = 0.2) -> None:
    """Sleep up to `seconds` between checks of a job's processes, waking as soon as the first running one exits
    (Popen.wait polls every few ms): a fixed sleep made every job end up to `seconds` after its processes did."""
    running = next((process for process in processes if process.poll() is None), None)
    if running is None:
        return
    try:
        running.wait(seconds)
    except subprocess.TimeoutExpired:
        pass


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def launch(command: list[str], *, cwd, env: dict[str, str], on_line, on_error_line=None, stderr_tail_lines: int = 100):
    """Start a job process in its own session; feed its output lines to `on_line` (stderr to `on_error_line` if given).

    Returns the process and a deque holding the last lines of its stderr (for
    the FailureReason).
    """
    import threading
    from collections import deque

    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    tail: deque[str] = deque(maxlen=stderr_tail_lines)
    records = _sessions_folder()
    if records is not None:  # a SIGKILLed emulator's next start ends what is left of this session
        sessions.record(records, process.pid)

    def pump(stream, handler, keep):
        for line in stream:
            handler(line)
            if keep is not None and line.strip():
                keep.append(line.rstrip("\n"))
        if keep is None and records is not None:  # stdout closed: the process has ended or soon will
            process.wait()
            sessions.forget(records, process.pid)

    process.mlscale_pumps = []
    for stream, handler, keep in ((process.stdout, on_line, None), (process.stderr, on_error_line or on_line, tail)):
        pump_thread = threading.Thread(target=pump, args=(stream, handler, keep), daemon=True)
        pump_thread.start()
        process.mlscale_pumps.append(pump_thread)
    return process, tail


def _sessions_folder():
    """Where the running server records its processes' sessions (None outside a server: a unit test)."""
    from mlscale_emulator import settings

    try:
        return settings.current().home / "sessions"
    except RuntimeError:
        return None


def settle(processes, seconds: float) -> None:
    """Give processes up to `seconds` in all to exit on their own, and their pumps to pass on their last lines."""
    deadline = time.monotonic() + seconds
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        drain_output(process, max(0.0, deadline - time.monotonic()))


def drain_output(process: subprocess.Popen, seconds: float = 0.3) -> None:
    """Wait (at most `seconds`: a child may keep the pipes open) until launch's pumps have passed on the last
    lines of an exited process, so that its traceback reaches the FailureReason and its last lines the logs."""
    deadline = time.monotonic() + seconds
    for pump_thread in getattr(process, "mlscale_pumps", ()):
        pump_thread.join(max(0.0, deadline - time.monotonic()))


_OPT_ML = "/opt/ml"
_namespace_ok: bool | None = None
_namespace_probe = threading.Lock()


def opt_ml_namespace_available() -> bool:
    """Can job processes get a private /opt/ml (a mount namespace with a bind mount)?

    Needs unshare(1) and either root or unprivileged user namespaces, and an
    /opt/ml directory to mount over. Probed once, under a lock: two jobs that
    start together must not see a half-done probe (one then ran without its
    /opt/ml). Without it the emulator rewrites /opt/ml paths in the command line.
    """
    global _namespace_ok
    with _namespace_probe:
        if _namespace_ok is None:
            _namespace_ok = _probe_namespace()
    return _namespace_ok


def _probe_namespace() -> bool:
    import shutil
    import tempfile

    if not shutil.which("unshare"):
        return False
    try:
        os.makedirs(_OPT_ML, exist_ok=True)
        with tempfile.TemporaryDirectory() as probe:
            open(os.path.join(probe, "ok"), "w").close()
            result = subprocess.run(
                with_private_opt_ml(["test", "-e", f"{_OPT_ML}/ok"], probe), capture_output=True, timeout=10
            )
            return result.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def with_private_opt_ml(command: list[str], root) -> list[str]:
    """Run `command` seeing `root` at /opt/ml, as a container sees its volume (other processes unaffected)."""
    user_ns = [] if os.geteuid() == 0 else ["--map-root-user"]
    script = f'mount --bind "$0" {_OPT_ML} && exec "$@"'
    return ["unshare", *user_ns, "--mount", "--propagation", "private", "sh", "-c", script, str(root), *command]


def rewrite_argument(argument: str, root: Path) -> str:
    return argument.replace(_OPT_ML + "/", f"{root}/")


def container_command(entrypoint: list[str], arguments: list[str], root: Path, private_opt_ml: bool) -> list[str]:
    """The entrypoint as this machine runs it: in a private /opt/ml when it can, else with paths rewritten."""
    command = [*entrypoint, *arguments]
    if command and Path(command[0]).name in ("python", "python3"):
        command[0] = sys.executable  # the image's Python is the emulator's
    if private_opt_ml:
        return with_private_opt_ml(command, root)
    return [rewrite_argument(a, root) for a in command]


def gpu_count() -> int:
    """This machine's GPUs, as nvidia-smi lists them (0 without it)."""
    import shutil

    if not shutil.which("nvidia-smi"):
        return 0
    result = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True)
    return len([line for line in result.stdout.splitlines() if line.strip()]) if result.returncode == 0 else 0


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*")


def first_exception_line(lines) -> str | None:
    """The first exception line in a process's stderr: under torchrun the script's, before torchrun's summary."""
    for line in lines:
        if _EXCEPTION_LINE.match(line.strip()) and "ChildFailedError" not in line:
            return line.strip()[:300]
    return None
