"""Run a job's process to its end, its timeout, or a stop request; say why a failed one failed."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

from mlscale_emulator.executors.processes import first_exception_line, launch, stop_process_group

STOP_GRACE_SECONDS = 10  # Spark's shutdown hooks (the Python workers, the local dirs) need a few seconds


@dataclass
class Outcome:
    ending: str  # "exited", "timed out" or "stopped"
    returncode: int | None
    tail: list[str]
    out_of_memory: str | None = None  # the first OutOfMemoryError line, wherever it was in the output


def run_to_end(command, *, cwd, env, on_line, on_error_line, timeout_s: float, stop: threading.Event) -> Outcome:
    """Spark's PythonRunner merges the driver script's stderr into its stdout, so the tail is of both."""
    tail: deque[str] = deque(maxlen=100)
    out_of_memory: list[str] = []

    def keeping(handler):
        def handle(line: str) -> None:
            handler(line)
            if line.strip():
                tail.append(line.rstrip("\n"))
            if not out_of_memory and "java.lang.OutOfMemoryError" in line:
                out_of_memory.append(line[line.index("java.lang.OutOfMemoryError") :].strip())

        return handle

    process, _ = launch(command, cwd=cwd, env=env, on_line=keeping(on_line), on_error_line=keeping(on_error_line))
    deadline = time.monotonic() + timeout_s
    ending = "exited"
    while process.poll() is None:
        if stop.wait(0.2):
            ending = "stopped"
            break
        if time.monotonic() >= deadline:
            ending = "timed out"
            break
    stop_process_group(process, STOP_GRACE_SECONDS)
    for pump in process.mlscale_pumps:  # the last lines reach the log before the run ends
        pump.join(5)
    return Outcome(ending, process.returncode, list(tail), out_of_memory[0] if out_of_memory else None)


def failure_message(outcome: Outcome, limit: int = 2000) -> str:
    """The driver's exception first (a Python traceback's last line, or a JVM exception), then the last lines
    of its output, as Glue and EMR Serverless put a failed run's cause in its ErrorMessage / stateDetails.
    A JVM out of memory says so first: Spark reports it as whatever failed next (a file read, a lost block), and
    the remedy is more memory per task (https://docs.aws.amazon.com/glue/latest/dg/monitor-profile-debug-oom-abnormalities.html)."""
    tail = outcome.tail
    exception = first_exception_line(reversed(tail))
    lines = ([exception] if exception else []) + tail[-8:]
    text = "\n".join(lines) or f"the job's process exited with code {outcome.returncode}"
    if outcome.out_of_memory:
        head = (
            f"Spark ran out of memory ({outcome.out_of_memory}): give each task more memory "
            "(a larger worker type, spark.executor.memory, or fewer tasks at once)\n"
        )
        return head + text[-(limit - len(head)) :]
    return text[-limit:]
