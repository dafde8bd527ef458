"""The real triggerer at scale: N deferred stage tasks at once on `mlscale airflow` (Celery, two workers).

A DAG of N mapped, deferrable BatchJobSensors over N emulator Batch jobs that each sleep (a `sleep` process:
cheap to hold open). Every sensor defers to mlscale's StageTrigger; all must resume and succeed. Printed: how
many were deferred at once at most, the end-to-end time, and the triggerer's peak RSS and CPU (its process
and its children, sampled each second).

    python benchmarks/triggerer_scale.py [waits, default 300] [job seconds, default 420]

The jobs must outlast the time the workers take to start every sensor (each task process a second or two of
CPU: about four minutes for 300 on two cores), so that all are deferred at once. About nine minutes in all.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

DAG = """
import pendulum
from airflow.sdk import DAG, task
from mlscale.sensors import BatchJobSensor

with DAG("mlscale_many_waits", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), schedule=None,
         max_active_tasks=64, params={"job_ids": []}):
    @task
    def job_ids(params=None):
        return params["job_ids"]

    BatchJobSensor.partial(task_id="wait", poke_interval=10, deferrable=True, timeout=3600).expand(job_id=job_ids())
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def submit_jobs(endpoint: str, count: int, seconds: int) -> list[str]:
    import boto3

    batch = boto3.client(
        "batch",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    role = iam.create_role(RoleName="many-waits", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    environment = batch.create_compute_environment(
        computeEnvironmentName="many-waits", type="UNMANAGED", state="ENABLED", serviceRole=role
    )["computeEnvironmentArn"]
    queue = batch.create_job_queue(
        jobQueueName="many-waits",
        state="ENABLED",
        priority=1,
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": environment}],
    )
    definition = batch.register_job_definition(
        jobDefinitionName="many-waits",
        type="container",
        containerProperties={
            "image": "busybox",
            "command": ["sleep", str(seconds)],
            "resourceRequirements": [{"type": "VCPU", "value": "1"}, {"type": "MEMORY", "value": "64"}],
        },
    )
    return [
        batch.submit_job(
            jobName=f"wait-{i:04d}", jobQueue=queue["jobQueueArn"], jobDefinition=definition["jobDefinitionArn"]
        )["jobId"]
        for i in range(count)
    ]


def main(count: int = 300, seconds: int = 420) -> int:
    home = Path(tempfile.mkdtemp(prefix="mlscale-many-waits-"))
    (home / "dags").mkdir()
    (home / "dags" / "mlscale_many_waits.py").write_text(DAG)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        {"MLSCALE_HOME": str(home / "state"), "MLSCALE_REPO": str(home), "MLSCALE_EMULATOR_PORT": str(free_port())}
    )
    stack = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlscale_emulator.cli",
            "airflow",
            "--port",
            str(port),
            "--executor",
            "celery",
            "--workers",
            "2",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(stack.stdout), daemon=True).start()
    try:
        deadline = time.monotonic() + 420
        while not (found := re.search(r"login: (\S+) / (\S+)[\s\S]*answers at (\S+)\.", "".join(output))):
            assert time.monotonic() < deadline and stack.poll() is None, "".join(output)[-3000:]
            time.sleep(1)
        user, password, endpoint = found.groups()
        url = f"http://localhost:{port}"
        token = httpx.post(f"{url}/auth/token", json={"username": user, "password": password}).json()["access_token"]
        api = httpx.Client(base_url=f"{url}/api/v2", headers={"Authorization": f"Bearer {token}"}, timeout=60)
        while api.get("/dags/mlscale_many_waits").status_code != 200:
            assert time.monotonic() < deadline, "the DAG was not parsed"
            time.sleep(2)
        jobs = submit_jobs(endpoint, count, seconds)
        api.patch("/dags/mlscale_many_waits", json={"is_paused": False}).raise_for_status()
        started = time.monotonic()
        run_id = (
            api.post(
                "/dags/mlscale_many_waits/dagRuns",
                json={"logical_date": None, "conf": {"job_ids": jobs}},
            )
            .raise_for_status()
            .json()["dag_run_id"]
        )
        triggerer = next(p for p in psutil.Process(stack.pid).children() if "triggerer" in " ".join(p.cmdline()))
        peak_rss, deferred_max, cpu_start = 0, 0, _cpu(triggerer)
        while True:
            family = [triggerer, *triggerer.children(recursive=True)]
            peak_rss = max(peak_rss, sum(_rss(p) for p in family))
            states = _task_instances(api, run_id)
            deferred_max = max(deferred_max, sum(1 for t in states if t["state"] == "deferred"))
            run = api.get(f"/dags/mlscale_many_waits/dagRuns/{run_id}").json()
            if run["state"] in ("success", "failed"):
                break
            assert time.monotonic() - started < seconds + 1800, "the run did not end"
            time.sleep(1)
        elapsed, cpu = time.monotonic() - started, _cpu(triggerer) - cpu_start
        succeeded = sum(1 for t in states if t["task_id"] == "wait" and t["state"] == "success")
        print(
            f"Triggerer at scale: {succeeded} of {count} deferred sensors succeeded (run {run['state']}); "
            f"{deferred_max} deferred at once at most; end to end {elapsed:.0f} s (jobs of {seconds} s); "
            f"triggerer peak RSS {peak_rss / 2**20:,.0f} MB, CPU {cpu:.0f} s ({cpu / elapsed:.2f} cores)"
        )
        return 0 if run["state"] == "success" and succeeded == count else 1
    finally:
        stack.send_signal(signal.SIGTERM)
        stack.wait(120)


def _task_instances(api: httpx.Client, run_id: str) -> list[dict]:
    """Every task instance of the run: the API answers at most [api] maximum_page_limit (100) a page."""
    found: list[dict] = []
    while True:
        page = (
            api.get(
                f"/dags/mlscale_many_waits/dagRuns/{run_id}/taskInstances", params={"limit": 100, "offset": len(found)}
            )
            .raise_for_status()
            .json()
        )
        found += page["task_instances"]
        if not page["task_instances"] or len(found) >= page["total_entries"]:
            return found


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:
        return 0


def _cpu(process: psutil.Process) -> float:
    """The process's CPU seconds and its children's, living and waited for."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            pass
    return total


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:3])))
