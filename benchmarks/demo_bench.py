"""The demo end to end: `mlscale demo '{"cache": true}'` twice on a fresh emulator this bench starts.

Figures:
- orchestration overhead of the first run: the pipeline run's wall time (Airflow's DagRun start to end) less
  the time its jobs ran (the union of training, processing, transform and compilation jobs' start-to-end
  from Describe), as a share of the wall time; each task's time and the job time inside it is printed;
- the emulator server's own peak RSS during the first run (its job, model-server and device processes are
  not the server) against a plain moto server after similar calls: the same S3 objects (bucket, key, size)
  put, as many training jobs and models created, and a call to each other service the demo uses;
- the stage cache: the re-run unchanged against the first run's wall time, and the jobs the re-run launched;
- the example trainer's data-wait fraction (its data:wait_fraction metric) in the first run's training job.

Quick: 1,000 records a day instead of 10,000.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from goals import Figure

REPO = Path(__file__).resolve().parent.parent
JOB_TIMES = {  # list call, its summaries key, the name field, describe call, start and end fields
    "training": (
        "list_training_jobs",
        "TrainingJobSummaries",
        "TrainingJobName",
        "describe_training_job",
        "TrainingStartTime",
        "TrainingEndTime",
    ),
    "processing": (
        "list_processing_jobs",
        "ProcessingJobSummaries",
        "ProcessingJobName",
        "describe_processing_job",
        "ProcessingStartTime",
        "ProcessingEndTime",
    ),
    "transform": (
        "list_transform_jobs",
        "TransformJobSummaries",
        "TransformJobName",
        "describe_transform_job",
        "TransformStartTime",
        "TransformEndTime",
    ),
    "compilation": (
        "list_compilation_jobs",
        "CompilationJobSummaries",
        "CompilationJobName",
        "describe_compilation_job",
        "CompilationStartTime",
        "CompilationEndTime",
    ),
}


# The other services the demo calls (Greengrass v2 aside: moto has none), one cheap call each for the baseline
DEMO_SERVICES = [
    ("athena", "list_work_groups", {}),
    ("glue", "get_databases", {}),
    ("logs", "describe_log_groups", {}),
    ("cloudwatch", "list_metrics", {}),
    ("iot", "list_thing_groups", {}),
    ("sts", "get_caller_identity", {}),
    ("iam", "list_roles", {}),
    ("application-autoscaling", "describe_scalable_targets", {"ServiceNamespace": "sagemaker"}),
]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PeakRss:
    """Samples one process's RSS every 0.2 s while in the `with` block; `peak` in bytes."""

    def __init__(self, pid: int):
        import psutil

        self.process, self.peak, self._stop = psutil.Process(pid), 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except Exception:  # noqa: BLE001 - the process has gone: keep the peak seen
                return
            self._stop.wait(0.2)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()


def _demo(home: str, emulator, conf: dict) -> dict:
    env = {
        **os.environ,
        "MLSCALE_HOME": home,
        "MLSCALE_REPO": str(REPO),
        "MLSCALE_EMULATOR_PORT": str(emulator.port),
        "MLSCALE_EMULATOR_HOME": str(emulator.home),
    }
    for name in ("AIRFLOW_HOME", "AIRFLOW_CONN_AWS_DEFAULT"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-m", "mlscale_emulator.cli", "demo", json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    ).stdout
    summary = out[out.index("mlscale demo summary") :] if "mlscale demo summary" in out else out[-2000:]
    run = re.search(r"DAG run\s+(\S+): success", summary)
    if not run:
        raise RuntimeError(f"the demo failed:\n{summary}")
    ran = re.search(r"ran: ([^\n]*)", summary).group(1)
    return {
        "run_id": run.group(1),
        "seconds": float(re.search(r"the pipeline run ([0-9.]+) s", summary).group(1)),
        "ran": [] if ran == "none" else ran.split(", "),
    }


def _utc(value: str | None) -> float | None:
    """Airflow's SQLite columns hold UTC, with or without an offset."""
    if not value:
        return None
    moment = datetime.fromisoformat(value)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def run_timings(home: str, run_id: str) -> tuple[tuple[float, float], dict[str, tuple[float, float]]]:
    """The pipeline run's (start, end) and each task's, from the demo's Airflow database."""
    with sqlite3.connect(Path(home) / "airflow" / "airflow.db") as db:
        start, end = db.execute(
            "SELECT start_date, end_date FROM dag_run WHERE dag_id='mlscale_pipeline' AND run_id=?", (run_id,)
        ).fetchone()
        tasks = db.execute(
            "SELECT task_id, start_date, end_date FROM task_instance WHERE dag_id='mlscale_pipeline' "
            "AND run_id=? AND start_date IS NOT NULL AND end_date IS NOT NULL",
            (run_id,),
        ).fetchall()
    return (_utc(start), _utc(end)), {task: (_utc(s), _utc(e)) for task, s, e in tasks}


def job_intervals(sagemaker, window: tuple[float, float]) -> list[tuple[str, float, float]]:
    """(kind, start, end) of every job that ran inside the window."""
    jobs = []
    for kind, (lister, key, name, describer, start, end) in JOB_TIMES.items():
        for summary in getattr(sagemaker, lister)(MaxResults=100)[key]:
            job = getattr(sagemaker, describer)(**{name: summary[name]})
            began, ended = job.get(start), job.get(end)
            if began and ended and window[0] <= began.timestamp() and ended.timestamp() <= window[1]:
                jobs.append((kind, began.timestamp(), ended.timestamp()))
    return jobs


def data_wait_fraction(sagemaker, window: tuple[float, float]) -> float | None:
    """The example trainer's own measure of its time waiting for data (the data:wait_fraction metric), for the
    training job that ran inside the window."""
    for summary in sagemaker.list_training_jobs(MaxResults=100)["TrainingJobSummaries"]:
        job = sagemaker.describe_training_job(TrainingJobName=summary["TrainingJobName"])
        if job.get("TrainingStartTime") and window[0] <= job["TrainingStartTime"].timestamp() <= window[1]:
            values = [m["Value"] for m in job.get("FinalMetricDataList", []) if m["MetricName"] == "data:wait_fraction"]
            if values:
                return values[0]
    return None


def covered(intervals: list[tuple[float, float]], within: tuple[float, float] | None = None) -> float:
    """Seconds covered by the union of the intervals (clipped to `within`)."""
    clipped = sorted((max(a, within[0]), min(b, within[1])) if within else (a, b) for a, b in intervals)
    total, reach = 0.0, None
    for a, b in clipped:
        if b <= a:
            continue
        if reach is None or a > reach:
            total, reach = total + (b - a), b
        elif b > reach:
            total, reach = total + (b - reach), b
    return total


def overhead_breakdown(tasks: dict[str, tuple[float, float]], jobs: list[tuple[str, float, float]]) -> list[str]:
    """One line per task, longest first: its time, the job time inside it, the rest."""
    spans = [(a, b) for _, a, b in jobs]
    rows = sorted(((e - s, covered(spans, (s, e)), task) for task, (s, e) in tasks.items()), reverse=True)
    return [
        f"  {task:<18} {took:6.1f} s, jobs {inside:5.1f} s, orchestration {took - inside:5.1f} s"
        for took, inside, task in rows
    ]


def s3_inventory(s3) -> list[tuple[str, str, int]]:
    objects = []
    for bucket in s3.list_buckets()["Buckets"]:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"]):
            objects += [(bucket["Name"], o["Key"], o["Size"]) for o in page.get("Contents", [])]
    return objects


def plain_moto_rss(objects: list[tuple[str, str, int]], jobs: int) -> int:
    """A plain moto server's peak RSS while it is given the same S3 objects and as many SageMaker resources."""
    import boto3

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
        s3, sagemaker = session.client("s3", endpoint_url=url), session.client("sagemaker", endpoint_url=url)
        for _ in range(100):
            try:
                s3.list_buckets()
                break
            except Exception:  # noqa: BLE001 - not answering yet
                time.sleep(0.2)
        with PeakRss(server.pid) as rss:
            for bucket in sorted({b for b, _, _ in objects}):
                s3.create_bucket(Bucket=bucket)
            for bucket, key, size in objects:
                s3.put_object(Bucket=bucket, Key=key, Body=os.urandom(size))
            role = "arn:aws:iam::123456789012:role/bench"
            for n in range(jobs):
                sagemaker.create_training_job(
                    TrainingJobName=f"bench-{n}",
                    RoleArn=role,
                    StoppingCondition={"MaxRuntimeInSeconds": 60},
                    AlgorithmSpecification={"TrainingImage": "image", "TrainingInputMode": "File"},
                    OutputDataConfig={"S3OutputPath": "s3://bench/out"},
                    ResourceConfig={"InstanceType": "ml.c5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 1},
                )
                sagemaker.create_model(
                    ModelName=f"bench-{n}",
                    ExecutionRoleArn=role,
                    PrimaryContainer={"Image": "image", "ModelDataUrl": "s3://bench/m.tar.gz"},
                )
            for service, call, kwargs in DEMO_SERVICES:  # moto loads a service's backend on its first call
                getattr(session.client(service, endpoint_url=url), call)(**kwargs)
            time.sleep(1)
        return rss.peak
    finally:
        server.terminate()
        server.wait(30)


def figures(quick: bool) -> list[Figure]:
    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    conf = {"cache": True, **({"records_per_day": 1000} if quick else {})}
    with tempfile.TemporaryDirectory(prefix="mlscale-demo-bench-") as home:
        emulator = EmulatorSettings(host="127.0.0.1", port=_free_port(), home=Path(home) / "emulator")
        pid = control.up(emulator)
        try:
            with PeakRss(pid) as server_rss:
                first = _demo(home, emulator, conf)
            window, tasks = run_timings(home, first["run_id"])
            jobs = job_intervals(control.client(emulator, "sagemaker"), window)
            waiting = data_wait_fraction(control.client(emulator, "sagemaker"), window)
            objects = s3_inventory(control.client(emulator, "s3"))
            again = _demo(home, emulator, conf)
            again_window, again_tasks = run_timings(home, again["run_id"])
        finally:
            control.down(emulator)
    wall, in_jobs = window[1] - window[0], covered([(a, b) for _, a, b in jobs])
    print(f"demo run {first['run_id']}: {wall:.1f} s, of which jobs ran {in_jobs:.1f} s; per task:")
    breakdown = overhead_breakdown(tasks, jobs)
    print("\n".join(breakdown), flush=True)
    print(f"re-run {again['run_id']}: {again_window[1] - again_window[0]:.1f} s; per task:")
    print("\n".join(overhead_breakdown(again_tasks, [])), flush=True)
    moto_peak = plain_moto_rss(objects, jobs=sum(kind == "training" for kind, _, _ in jobs))
    data = "7 x 1,000" if quick else "7 x 10,000"
    top = "; ".join(line.strip() for line in breakdown[:3])
    return [
        Figure(
            "demo_orchestration_overhead",
            (wall - in_jobs) / wall,
            None,
            "<= 0.2",
            "of the run",
            f"{wall:.1f} s run, {in_jobs:.1f} s in {len(jobs)} jobs ({data} records); longest tasks: {top}",
        ),
        Figure(
            "trainer_data_wait_fraction",
            1.0 if waiting is None else waiting,
            None,
            "<= 0.05",
            "of training",
            "the example trainer's data:wait_fraction metric in the demo's training job (time waiting for the "
            "next batch of the shard loader / the epoch)" + (" (not reported)" if waiting is None else ""),
        ),
        Figure(
            "emulator_server_peak_rss_vs_moto",
            server_rss.peak / 2**20,
            moto_peak / 2**20,
            "<= 1.5",
            "MB",
            f"the emulator server during the demo vs plain moto given the same {len(objects)} S3 objects "
            f"({sum(s for _, _, s in objects) / 1e6:.0f} MB)",
        ),
        Figure(
            "cache_unchanged_rerun_wall",
            again["seconds"],
            first["seconds"],
            "<= 0.25",
            "s",
            f"the demo's pipeline run ({data} records), re-run unchanged with cache on vs its first run",
        ),
        Figure(
            "cache_unchanged_rerun_new_jobs",
            len(again["ran"]),
            None,
            "<= 0",
            "jobs",
            f"stages that launched a job on the re-run: {', '.join(again['ran']) or 'none'}",
        ),
    ]


if __name__ == "__main__":
    for figure in figures(os.environ.get("MLSCALE_BENCH_QUICK") == "1"):
        print(figure.line())
