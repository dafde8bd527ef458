"""Triggerer capacity under AWS's request limits: N concurrent waits in one asyncio loop, mlscale's StageTrigger
against the provider's trigger (SageMakerTrigger for training jobs, BatchJobTrigger for Batch jobs), over the
same jobs at the same poll interval, against one server that throttles as the emulator does
(mlscale_emulator.limits, its default rates: SageMaker Describe*/List* 20 a second, Batch 50, CloudWatch Logs
25 per call; per account and region).

The jobs are cheap: moto's training jobs, each InProgress until the end time its `end_at` hyperparameter names,
then Completed (a thread of the server moves them, so Describe and List agree, as on AWS); Batch jobs answered
by DescribeJobs from a table of ids and end times (RUNNING, then SUCCEEDED). A wait's lag after its job's end is
known. The server counts every call by operation, and the calls it throttled. Each side runs in a fresh
interpreter, so its peak RSS and CPU are its own. mlscale's trigger also tails each job's CloudWatch logs
(calls the provider's does not make), under its log budget. Its first-event hold (an Airflow 3.3 workaround,
mlscale.triggers) is 0 here. A stage's first poll comes one interval after it created the job; the provider's
operator describes the job before deferring and its trigger describes it at once.

    python benchmarks/trigger_bench.py [waits] [poll seconds]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import UTC
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVICE = {"training": "sagemaker", "batch": "batch"}

WAIT = r"""
import asyncio, json, os, sys, threading, time
import psutil
side, kind, names, ends = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
poll = float(sys.argv[5])
proc, peak = psutil.Process(), [0]
def sample():
    while True:
        peak[0] = max(peak[0], proc.memory_info().rss); time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()
if side == "mlscale":
    from mlscale.triggers.stage import StageTrigger
    os.environ["AIRFLOW__MLSCALE__FIRST_EVENT_DELAY"] = "0"
    stage_kind = {"training": "training", "batch": "batch_job"}[kind]
    # as a stage defers it: right after it created the job (the provider's operator describes it then instead)
    make = lambda name: StageTrigger(stage_kind, name, poll_interval=poll, aws_conn_id="bench",
                                     next_poll_at=time.time() + poll)
elif kind == "training":
    from airflow.providers.amazon.aws.triggers.sagemaker import SageMakerTrigger
    make = lambda name: SageMakerTrigger(job_name=name, job_type="training", poke_interval=int(poll),
                                         max_attempts=100000, aws_conn_id="bench")
else:
    from airflow.providers.amazon.aws.triggers.batch import BatchJobTrigger
    make = lambda name: BatchJobTrigger(job_id=name, waiter_delay=int(poll), waiter_max_attempts=100000,
                                        aws_conn_id="bench", region_name="us-east-1")
async def wait(name):
    started = time.time()
    try:
        async for event in make(name).run():
            return name, time.time(), event.payload.get("status"), started
    except Exception as error:  # a wait that failed (the provider's waiter gives up on some errors)
        return name, time.time(), f"raised {type(error).__name__}", started
async def main():
    return await asyncio.gather(*(wait(n) for n in names))
cpu0 = proc.cpu_times(); t0 = time.time()
results = asyncio.run(main())
cpu1 = proc.cpu_times()
ok = [r for r in results if r[2] == "success"]
print(json.dumps({"lags": [seen - ends[name] for name, seen, *_ in ok],
                  "statuses": {s: sum(1 for r in results if r[2] == s) for s in {r[2] for r in results}},
                  "peak_rss": peak[0], "wait_seconds": sum(seen - started for _, seen, _, started in results),
                  "cpu_cores": (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (time.time() - t0)}))
"""


def serve(port: int) -> None:
    """moto's server behind the emulator's request limits, with cheap training jobs and Batch jobs that end at
    their end times, counting every call by operation and every throttled one."""
    import collections
    import logging
    import threading
    from datetime import datetime

    from moto.moto_server import werkzeug_app
    from moto.sagemaker import models
    from werkzeug.serving import make_server

    from mlscale_emulator import guard, limits
    from mlscale_emulator.sagemaker import listing

    listing.install()  # filtered, then paged; SecondaryStatus; LastModifiedTimeAfter as SageMaker reads it
    moto_init = models.FakeTrainingJob.__init__

    def init(job, *args, **kwargs):
        moto_init(job, *args, **kwargs)
        job.training_job_status, job.secondary_status = "InProgress", "Training"

    models.FakeTrainingJob.__init__ = init

    def complete() -> None:
        while True:
            now = time.time()
            for backend in [b for regions in models.sagemaker_backends.values() for b in regions.values()]:
                for job in list(backend.training_jobs.values()):
                    if job.training_job_status == "InProgress" and now >= float(job.hyper_parameters["end_at"]):
                        job.last_modified_time = job.training_end_time = datetime.now(UTC)
                        job.training_job_status, job.secondary_status = "Completed", "Completed"
            time.sleep(0.1)

    threading.Thread(target=complete, daemon=True).start()
    batch_ends: dict[str, float] = {}
    counts, throttled = collections.Counter(), collections.Counter()

    def label(environ) -> str:
        identity = limits.request_identity(environ)
        return f"{identity[2]}:{identity[3]}" if identity else environ.get("PATH_INFO", "")

    def refuse(start_response, environ, status, code, message):
        throttled[label(environ)] += 1
        return guard.error_response(start_response, environ, status, code, message)

    def fake_batch(app):
        def serve_batch(environ, start_response):
            if environ.get("PATH_INFO") != "/v1/describejobs":
                return app(environ, start_response)
            body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
            now = time.time()
            jobs = [
                {
                    "jobId": j,
                    "jobName": j,
                    "jobArn": f"arn:aws:batch:us-east-1:123456789012:job/{j}",
                    "jobQueue": "bench",
                    "jobDefinition": "bench",
                    "createdAt": 0,
                    "startedAt": 0,
                    "status": "SUCCEEDED" if now >= batch_ends[j] else "RUNNING",
                }
                for j in body.get("jobs", [])
                if j in batch_ends
            ]
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"jobs": jobs}).encode()]

        return serve_batch

    throttle = limits.Throttle(
        fake_batch(werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)),
        limits.configured(),
        refuse,
    )

    def app(environ, start_response):
        path = environ.get("PATH_INFO")
        if path == "/bench/counts":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"calls": counts, "throttled": throttled}).encode()]
        if path == "/bench/batch-jobs":
            batch_ends.update(json.loads(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))))
            start_response("200 OK", [])
            return [b"{}"]
        counts[label(environ)] += 1
        return throttle(environ, start_response)

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request
    logging.getLogger("mlscale_emulator.limits").setLevel(logging.WARNING)
    make_server("127.0.0.1", port, app, threaded=True, request_handler=werkzeug_app.MotoRequestHandler).serve_forever()


def create_jobs(endpoint: str, kind: str, prefix: str, count: int, first_end: float, spread: float) -> dict:
    import boto3
    from botocore.config import Config

    from mlscale_emulator.limits import EXECUTOR_AGENT

    ends = {f"{prefix}-{i:04d}": first_end + spread * i / max(1, count - 1) for i in range(count)}
    if kind == "batch":
        request = urllib.request.Request(f"{endpoint}/bench/batch-jobs", data=json.dumps(ends).encode())
        urllib.request.urlopen(request, timeout=30).read()
        return ends
    sm = boto3.client(
        "sagemaker",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench-setup",
        aws_secret_access_key="bench",
        config=Config(user_agent_extra=EXECUTOR_AGENT),
    )  # the setup is not counted
    for name, end in ends.items():
        sm.create_training_job(
            TrainingJobName=name,
            RoleArn="arn:aws:iam::123456789012:role/bench",
            AlgorithmSpecification={"TrainingImage": "bench", "TrainingInputMode": "File"},
            HyperParameters={"end_at": str(end)},
            OutputDataConfig={"S3OutputPath": "s3://bench/out"},
            ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            StoppingCondition={"MaxRuntimeInSeconds": 3600},
        )
    return ends


def server_counts(endpoint: str) -> dict:
    return json.loads(urllib.request.urlopen(f"{endpoint}/bench/counts", timeout=30).read())


def measure(side: str, kind: str, endpoint: str, count: int, poll: float) -> dict:
    lead = 10 + count * (0.02 if kind == "training" else 0.0)  # the waits start before the first job ends
    ends = create_jobs(endpoint, kind, f"{side}-{kind}", count, time.time() + lead, spread=30)
    # the waits' own account (access key): the setup's creates are throttled in a bucket of their own
    env = {
        **os.environ,
        "AIRFLOW_CONN_BENCH": json.dumps(
            {
                "conn_type": "aws",
                "login": f"bench-{side}-{kind}",
                "password": "bench",
                "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"},
            }
        ),
    }
    before, started = server_counts(endpoint), time.time()
    out = subprocess.run(
        [sys.executable, "-c", WAIT, side, kind, json.dumps(list(ends)), json.dumps(ends), str(poll)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.time() - started
    after = server_counts(endpoint)
    result = json.loads(out.stdout.strip().splitlines()[-1])

    def delta(table: str, prefix: str) -> int:
        return sum(v - before[table].get(k, 0) for k, v in after[table].items() if k.startswith(prefix))

    service = SERVICE[kind]
    job_minutes = sum(max(0.0, end - started) for end in ends.values()) / 60
    result.update(
        count=count,
        api_calls=delta("calls", f"{service}:"),
        logs_calls=delta("calls", "logs:"),
        api_throttled=delta("throttled", f"{service}:"),
        logs_throttled=delta("throttled", "logs:"),
        seconds=elapsed,
    )
    result["api_per_job_minute"] = result["api_calls"] / job_minutes
    result["logs_per_second"] = result["logs_calls"] / elapsed
    return result


def report(kind: str, count: int, poll: float, sides: dict[str, dict]) -> None:
    for side, r in sides.items():
        lags = sorted(r["lags"]) or [float("nan")]
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(r["statuses"].items()))
        print(
            f"  {kind:8s} {side:8s} {len(r['lags'])} of {count} succeeded ({statuses}); seen after the job's end: "
            f"median {statistics.median(lags):.1f} s, max {lags[-1]:.1f} s; {r['api_per_job_minute']:.2f} "
            f"{SERVICE[kind]} calls per job-minute ({r['api_calls']} calls, {r['api_throttled']} throttled); "
            f"logs {r['logs_per_second']:.1f} calls/s ({r['logs_throttled']} throttled); peak RSS "
            f"{r['peak_rss'] / 2**20:,.0f} MB; {r['cpu_cores']:.2f} CPU cores"
        )


def run_sides(count: int, poll: float, kinds=("training", "batch")) -> dict[str, dict[str, dict]]:
    from tests.conftest import free_port

    port = free_port()
    server = multiprocessing.Process(target=serve, args=(port,), daemon=True)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            server_counts(endpoint)
            break
        except OSError:
            assert time.time() < deadline, "the bench server did not start"
            time.sleep(0.2)
    try:
        return {
            kind: {side: measure(side, kind, endpoint, count, poll) for side in ("provider", "mlscale")}
            for kind in kinds
        }
    finally:
        server.terminate()


def figures(quick: bool = False, poll: float = 5.0) -> list:
    from goals import Figure

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    count = 200 if quick else 1000
    results = run_sides(count, poll)
    made = []
    for kind, sides in results.items():
        report(kind, count, poll, sides)
        ours, theirs = sides["mlscale"], sides["provider"]
        note = (
            f"{count} {kind} waits, poll {poll:g} s, limits on; {len(ours['lags'])} of {count} succeeded, "
            f"{ours['api_throttled']} throttled calls; the provider's: {len(theirs['lags'])} succeeded, "
            f"{theirs['api_throttled']} throttled calls, statuses {theirs['statuses']}"
        )
        prefix = "trigger" if kind == "training" else "trigger_batch"
        made += [
            Figure(f"{prefix}_completed", len(ours["lags"]), count, ">= 1.0", "waits", note),
            Figure(
                f"{prefix}_max_lag_in_polls",
                max(ours["lags"] or [float("inf")]) / poll,
                None,
                "<= 2",
                "polls",
                f"{note}; median {statistics.median(ours['lags'] or [0]):.1f} s; the provider's max "
                f"{max(theirs['lags'] or [float('nan')]):.1f} s",
            ),
            Figure(
                f"{prefix}_api_calls_vs_provider",
                ours["api_per_job_minute"],
                theirs["api_per_job_minute"],
                "<= 0.1",
                "calls per job-minute",
                note,
            ),
            Figure(
                f"{prefix}_logs_calls_per_second",
                ours["logs_per_second"],
                None,
                "<= 25",
                "calls/s",
                f"{note}; {ours['logs_throttled']} logs calls throttled",
            ),
        ]
        if kind == "training":
            made.append(
                Figure(
                    "trigger_peak_rss_vs_provider",
                    ours["peak_rss"] / 2**20,
                    theirs["peak_rss"] / 2**20,
                    "<= 1.5",
                    "MB",
                    f"{note}; CPU {ours['cpu_cores']:.2f} vs {theirs['cpu_cores']:.2f} cores",
                )
            )
    return made


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 200
    poll = float(argv[1]) if len(argv) > 1 else 5.0
    kinds = tuple(argv[2].split(",")) if len(argv) > 2 else ("training", "batch")
    for kind, sides in run_sides(count, poll, kinds).items():
        report(kind, count, poll, sides)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
