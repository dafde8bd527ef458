"""Samples what a job's processes really use and publishes it as SageMaker does, to CloudWatch.

/aws/sagemaker/TrainingJobs, dimension Host=<job>/algo-N, unit Percent:
CPUUtilization summed over cores (400% = 4 busy cores), MemoryUtilization and
DiskUtilization 0-100, GPUUtilization and GPUMemoryUtilization summed over
GPUs where nvidia-smi finds any (the machine's GPUs: emulated hosts share them).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path

NAMESPACE = "/aws/sagemaker/TrainingJobs"


def _tree(pid: int):
    import psutil

    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def gpu_sample() -> dict[str, float]:
    if not shutil.which("nvidia-smi"):
        return {}
    result = subprocess.run(
        ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
    )
    rows = [line.split(",") for line in result.stdout.strip().splitlines() if line.strip()]
    if result.returncode != 0 or not rows:
        return {}
    return {
        "GPUUtilization": sum(float(r[0]) for r in rows),
        "GPUMemoryUtilization": sum(100.0 * float(r[1]) / float(r[2]) for r in rows),
    }


class UtilisationSampler:
    """Publishes one sample per host every `interval` seconds until stopped."""

    def __init__(self, cloudwatch, job_name: str, hosts: dict[str, int], disk_path: Path, interval: float = 5.0):
        self.cloudwatch, self.job_name, self.hosts = cloudwatch, job_name, hosts  # host -> pid
        self.disk_path, self.interval = disk_path, interval
        self._stop = threading.Event()
        self._cpu_seen: dict[int, object] = {}
        self.thread = threading.Thread(target=self._run, name=f"metrics-{job_name}", daemon=True)

    def start(self) -> UtilisationSampler:
        self.thread.start()
        return self

    def stop(self) -> None:
        from mlscale_emulator.executors.processes import shutting_down

        self._stop.set()
        if not shutting_down.is_set():  # a stopping server answers no more: its last publish would only retry
            self.thread.join(timeout=self.interval + 5)

    def sample(self) -> dict[str, dict[str, float]]:
        import psutil

        total_memory = psutil.virtual_memory().total
        disk = psutil.disk_usage(str(self.disk_path)).percent
        gpu = gpu_sample()
        samples = {}
        for host, pid in self.hosts.items():
            cpu = memory = 0.0
            for process in _tree(pid):
                try:
                    # cpu_percent(None) compares with the previous call on the same Process object
                    tracked = self._cpu_seen.setdefault(process.pid, process)
                    cpu += tracked.cpu_percent(None)
                    memory += process.memory_info().rss
                except psutil.Error:
                    continue
            samples[host] = {
                "CPUUtilization": cpu,
                "MemoryUtilization": 100.0 * memory / total_memory,
                "DiskUtilization": disk,
                **gpu,
            }
        return samples

    def publish(self, samples: dict[str, dict[str, float]]) -> None:
        now = datetime.now(UTC)
        data = [
            {
                "MetricName": name,
                "Dimensions": [{"Name": "Host", "Value": f"{self.job_name}/{host}"}],
                "Timestamp": now,
                "Value": value,
                "Unit": "Percent",
            }
            for host, metrics in samples.items()
            for name, value in metrics.items()
        ]
        for start in range(0, len(data), 1000):
            self.cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[start : start + 1000])

    def _run(self) -> None:
        self.sample()  # primes cpu_percent
        while not self._stop.wait(self.interval):
            self.publish(self.sample())
        from mlscale_emulator.executors.processes import shutting_down

        if not shutting_down.is_set():
            self.publish(self.sample())  # the last stretch too
