"""The stage cache: `mlscale demo '{"cache": true}'` twice on a fresh emulator; the second (unchanged) run
against the first.

Figures: the pipeline run's own wall time (Airflow's DagRun start to end: the producer, the emulator's start
and the database set-up are left out) of the re-run against the first run's, and the jobs the re-run
launched (the stages its `stage cache` line says ran). Quick: 1,000 records a day instead of 10,000.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from goals import Figure

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _demo(home: str, conf: dict) -> tuple[float, list[str]]:
    env = {**os.environ, "MLSCALE_HOME": home, "MLSCALE_REPO": str(REPO), "MLSCALE_EMULATOR_PORT": str(_free_port())}
    for name in ("AIRFLOW_HOME", "AIRFLOW_CONN_AWS_DEFAULT"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, "-m", "mlscale.cli", "demo", json.dumps(conf)], env=env,
                         capture_output=True, text=True, timeout=900).stdout  # fmt: skip
    summary = out[out.index("mlscale demo summary"):] if "mlscale demo summary" in out else out[-2000:]
    if not re.search(r"DAG run\s+\S+: success", summary):
        raise RuntimeError(f"the demo failed:\n{summary}")
    seconds = float(re.search(r"the pipeline run ([0-9.]+) s", summary).group(1))
    ran = re.search(r"ran: ([^\n]*)", summary).group(1)
    return seconds, [] if ran == "none" else ran.split(", ")


def figures(quick: bool) -> list[Figure]:
    conf = {"cache": True, **({"records_per_day": 1000} if quick else {})}
    with tempfile.TemporaryDirectory(prefix="mlscale-cache-bench-") as home:
        first, _ = _demo(home, conf)
        again, ran = _demo(home, conf)
    data = "7 x 1,000" if quick else "7 x 10,000"
    return [
        Figure("cache_unchanged_rerun_wall", again, first, "<= 0.25", "s",
               f"the demo's pipeline run ({data} records), re-run unchanged with cache on vs its first run"),
        Figure("cache_unchanged_rerun_new_jobs", len(ran), None, "<= 0", "jobs",
               f"stages that launched a job on the re-run: {', '.join(ran) or 'none'}"),
    ]  # fmt: skip


if __name__ == "__main__":
    for figure in figures(os.environ.get("MLSCALE_BENCH_QUICK") == "1"):
        print(figure.line())
