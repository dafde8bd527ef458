"""A Glue Spark job's WorkerType and NumberOfWorkers as one local Spark: task slots and JVM heap.

Each Glue worker type's vCPUs and memory, from https://docs.aws.amazon.com/glue/latest/dg/worker-types.html:
one worker is the driver, the others run executors. Locally one JVM does both, so the job gets the executors'
vCPUs as task slots (at most this machine's cores) and one executor's memory as heap (at most a quarter of
this machine's memory), unless its `--conf` names spark.executor.memory or spark.driver.memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from mlscale_emulator.spark import runtime

# WorkerType -> (vCPUs, memory GiB) per worker
WORKER_TYPES = {
    "Standard": (4, 16),
    "G.025X": (2, 4),
    "G.1X": (4, 16),
    "G.2X": (8, 32),
    "G.4X": (16, 64),
    "G.8X": (32, 128),
    "Z.2X": (8, 64),
}


@dataclass(frozen=True)
class LocalSlots:
    cores: int
    memory_mb: int


def local_slots(worker_type: str | None, number_of_workers: int | None) -> LocalSlots:
    vcpus, memory_gib = WORKER_TYPES.get(worker_type or "G.1X", WORKER_TYPES["G.1X"])
    executors = max(1, int(number_of_workers or 2) - 1)
    cores = max(1, min(os.cpu_count() or 1, vcpus * executors))
    memory_mb = min(memory_gib * 1024, psutil.virtual_memory().total // (4 << 20))
    return LocalSlots(cores, int(memory_mb))


def heap_mb(slots: LocalSlots, conf: dict[str, str]) -> int:
    """The job's heap: what its --conf asks of the executor (or driver), else the worker type's."""
    for key in ("spark.executor.memory", "spark.driver.memory"):
        if key in conf:
            return runtime.parse_memory_mb(conf[key])
    return slots.memory_mb
