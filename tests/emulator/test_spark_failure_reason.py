"""A failed Spark run's reason: the driver's exception and last lines, and an out-of-memory named first."""

from __future__ import annotations

import sys
import threading

from mlscale_emulator.spark.script_run import failure_message, run_to_end

# What a Spark driver prints when a task's JVM heap runs out: the OutOfMemoryError is deep in a task's stack trace,
# then 150 lines later the driver fails on whatever broke next (here a file read)
OUT_OF_MEMORY_RUN = r"""
import sys
print("26/12/07 ERROR Executor: Exception in task 3.0 in stage 2.0 (TID 49)", file=sys.stderr)
print("Caused by: java.lang.RuntimeException: java.lang.OutOfMemoryError: Java heap space", file=sys.stderr)
for i in range(150):
    print(f"\tat org.apache.spark.Frame{i}(Frame.scala:{i})", file=sys.stderr)
print("py4j.protocol.Py4JJavaError: An error occurred while calling o91.parquet.", file=sys.stderr)
sys.exit(1)
"""


def run(script: str, tmp_path):
    lines: list[str] = []
    outcome = run_to_end(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        on_line=lines.append,
        on_error_line=lines.append,
        timeout_s=60,
        stop=threading.Event(),
    )
    return outcome, lines


def test_an_out_of_memory_anywhere_in_the_output_is_the_first_thing_the_reason_says(tmp_path):
    outcome, lines = run(OUT_OF_MEMORY_RUN, tmp_path)
    assert outcome.ending == "exited" and outcome.returncode == 1 and len(lines) == 153
    reason = failure_message(outcome)
    first, second = reason.splitlines()[:2]
    assert first.startswith("Spark ran out of memory (java.lang.OutOfMemoryError: Java heap space): give each task")
    assert second == "py4j.protocol.Py4JJavaError: An error occurred while calling o91.parquet."
    assert len(reason) <= 2000


def test_a_script_error_is_the_reason_without_an_out_of_memory_notice(tmp_path):
    outcome, _ = run("raise ValueError('no rows in the window 2025-01-01..2025-01-08')", tmp_path)
    reason = failure_message(outcome)
    assert reason.startswith("ValueError: no rows in the window 2025-01-01..2025-01-08\n")
    assert "out of memory" not in reason
