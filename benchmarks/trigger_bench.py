"""Triggerer capacity: N concurrent training-job waits in one asyncio loop, mlscale's StageTrigger against the
provider's SageMakerTrigger, over the same jobs at the same poll interval.

The jobs are moto's (a ThreadedMotoServer in its own process), made cheap: each says InProgress until the end
time its `end_at` hyperparameter names, then Completed, so a wait's lag after its job's end is known. The
server counts DescribeTrainingJob calls. Each side runs in a fresh interpreter, so its peak RSS and CPU are its
own. mlscale's trigger also tails the job's CloudWatch logs (more calls, which the provider's does not make);
its first-event hold (an Airflow 3.3 workaround, mlscale.triggers) is set to 0 for both sides' fairness. Each
trigger is made as its operator defers: a stage's first Describe comes a poll after it created the job; the
provider's SageMakerTrainingOperator describes the job before deferring and its trigger describes it at once.

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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

WAIT = r"""
import asyncio, json, os, sys, threading, time
import psutil
side, names, ends = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
poll = float(sys.argv[4])
proc, peak = psutil.Process(), [0]
def sample():
    while True:
        peak[0] = max(peak[0], proc.memory_info().rss); time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()
if side == "mlscale":
    from mlscale.triggers.stage import StageTrigger
    os.environ["AIRFLOW__MLSCALE__FIRST_EVENT_DELAY"] = "0"
    # as a stage defers it: right after it created the job (the provider's operator describes it then instead)
    make = lambda name: StageTrigger("training", name, poll_interval=poll, aws_conn_id="bench",
                                     next_poll_at=time.time() + poll)
else:
    from airflow.providers.amazon.aws.triggers.sagemaker import SageMakerTrigger
    make = lambda name: SageMakerTrigger(job_name=name, job_type="training", poke_interval=int(poll),
                                         max_attempts=100000, aws_conn_id="bench")
async def wait(name):
    started = time.time()
    async for event in make(name).run():
        return name, time.time(), event.payload.get("status"), started
async def main():
    return await asyncio.gather(*(wait(n) for n in names))
cpu0 = proc.cpu_times(); t0 = time.time()
results = asyncio.run(main())
cpu1 = proc.cpu_times()
lags = [seen - ends[name] for name, seen, *_ in results]
print(json.dumps({"lags": lags, "statuses": sorted({r[2] for r in results}), "peak_rss": peak[0],
                  "wait_seconds": sum(seen - started for _, seen, _, started in results),
                  "cpu_cores": (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (time.time() - t0)}))
"""


def serve(port: int, describes) -> None:
    """moto's server with training jobs that end at their `end_at`; counts DescribeTrainingJob."""
    import logging

    from moto.sagemaker import models
    from moto.server import ThreadedMotoServer

    moto_describe = models.SageMakerModelBackend.describe_training_job

    def describe(self, training_job_name):
        answer = dict(moto_describe(self, training_job_name))
        with describes.get_lock():
            describes.value += 1
        done = time.time() >= float(answer["HyperParameters"]["end_at"])
        answer["TrainingJobStatus"] = "Completed" if done else "InProgress"
        answer["SecondaryStatus"] = "Completed" if done else "Training"
        return answer

    models.SageMakerModelBackend.describe_training_job = describe
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    while True:
        time.sleep(3600)


def create_jobs(endpoint: str, prefix: str, count: int, first_end: float, spread: float) -> dict[str, float]:
    import boto3

    sm = boto3.client("sagemaker", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench")  # fmt: skip
    ends = {}
    for index in range(count):
        name, end = f"{prefix}-{index:04d}", first_end + spread * index / max(1, count - 1)
        sm.create_training_job(
            TrainingJobName=name, RoleArn="arn:aws:iam::123456789012:role/bench",
            AlgorithmSpecification={"TrainingImage": "bench", "TrainingInputMode": "File"},
            HyperParameters={"end_at": str(end)}, OutputDataConfig={"S3OutputPath": "s3://bench/out"},
            ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
            StoppingCondition={"MaxRuntimeInSeconds": 3600})  # fmt: skip
        ends[name] = end
    return ends


def measure(side: str, endpoint: str, describes, count: int, poll: float) -> dict:
    lead = 10 + count * 0.01  # the waits start before the first job ends
    ends = create_jobs(endpoint, side, count, time.time() + lead, spread=30)
    env = {**os.environ, "AIRFLOW_CONN_BENCH": json.dumps({"conn_type": "aws", "login": "bench", "password": "bench",
                                                           "extra": {"endpoint_url": endpoint, "region_name": "us-east-1"}})}  # fmt: skip
    before, started = describes.value, time.time()
    out = subprocess.run([sys.executable, "-c", WAIT, side, json.dumps(list(ends)), json.dumps(ends), str(poll)],
                         env=env, capture_output=True, text=True, check=True)  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    job_minutes = sum(max(0.0, end - started) for end in ends.values()) / 60
    # per minute of waiting, too: a side that starts its waits later (slower imports) covers less of each job
    result.update(describes=describes.value - before, describes_per_job_minute=(describes.value - before) / job_minutes,
                  describes_per_wait_minute=(describes.value - before) / (result["wait_seconds"] / 60))
    return result


def report(count: int, poll: float, sides: dict[str, dict]) -> None:
    for side, r in sides.items():
        lags = sorted(r["lags"])
        print(f"  {side:8s} {len(lags)} of {count} completed ({', '.join(r['statuses'])}); seen after the job's end: "
              f"median {statistics.median(lags):.1f} s, max {lags[-1]:.1f} s; peak RSS {r['peak_rss'] / 2**20:,.0f} MB; "
              f"{r['cpu_cores']:.2f} CPU cores; {r['describes_per_job_minute']:.1f} Describe calls per job-minute, "
              f"{r['describes_per_wait_minute']:.1f} per minute of waiting")  # fmt: skip
    ours, theirs = sides["mlscale"], sides["provider"]
    print(f"Trigger capacity ({count} waits, poll {poll:g} s): max lag {max(ours['lags']):.1f} s "
          f"(goal <= {2 * poll:g} s); peak RSS {ours['peak_rss'] / theirs['peak_rss']:.2f}x the provider's "
          f"(goal <= 1.5x); Describe calls {ours['describes_per_job_minute'] / theirs['describes_per_job_minute']:.2f}x "
          f"the provider's (goal <= 1.0x)")  # fmt: skip


def run_sides(count: int, poll: float) -> dict[str, dict]:
    from tests.conftest import free_port

    describes = multiprocessing.Value("q", 0)
    port = free_port()
    server = multiprocessing.Process(target=serve, args=(port, describes), daemon=True)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while True:
        try:
            import urllib.request

            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2)
            break
        except OSError:
            assert time.time() < deadline, "moto's server did not start"
            time.sleep(0.2)
    try:
        return {side: measure(side, endpoint, describes, count, poll) for side in ("provider", "mlscale")}
    finally:
        server.terminate()


def figures(quick: bool = False, poll: float = 5.0) -> list:
    from goals import Figure

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    count = 200 if quick else 1000
    sides = run_sides(count, poll)
    report(count, poll, sides)
    ours, theirs = sides["mlscale"], sides["provider"]
    note = f"{count} waits, poll {poll:g} s; {len(ours['lags'])} of {count} completed"
    return [
        Figure("trigger_max_lag_in_polls", max(ours["lags"]) / poll, None, "<= 2", "polls",
               f"{note}; median {statistics.median(ours['lags']):.1f} s; the provider's max "
               f"{max(theirs['lags']):.1f} s"),
        Figure("trigger_completed", len(ours["lags"]), count, ">= 1.0", "waits", note),
        Figure("trigger_peak_rss_vs_provider", ours["peak_rss"] / 2**20, theirs["peak_rss"] / 2**20, "<= 1.5", "MB",
               f"{note}; CPU {ours['cpu_cores']:.2f} vs {theirs['cpu_cores']:.2f} cores"),
        Figure("trigger_describes_per_wait_minute_vs_provider", ours["describes_per_wait_minute"],
               theirs["describes_per_wait_minute"], "<= 1.0", "calls",
               f"{note}; per job-minute {ours['describes_per_job_minute']:.1f} vs {theirs['describes_per_job_minute']:.1f}"),
    ]


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 200
    poll = float(argv[1]) if len(argv) > 1 else 5.0
    report(count, poll, run_sides(count, poll))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main(sys.argv[1:]))
