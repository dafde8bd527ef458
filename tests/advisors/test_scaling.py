"""The bottleneck classifier and the scaling ladder, on realistic metric traces."""

import numpy as np
import pytest

from mlscale.advisors.instances import instance
from mlscale.advisors.scaling import Evidence, Verdict, classify, next_step
from mlscale.specs import SpecError

rng = np.random.default_rng(0)


def trace(level: float, spread: float = 5.0, n: int = 60) -> list[float]:
    return list(np.clip(rng.normal(level, spread, n), 0, 100))


def spiky(low: float, high: float, busy_share: float, n: int = 60) -> list[float]:
    return [high if i < busy_share * n else low for i in range(n)]


CASES = [
    # name, evidence, has_gpu, expected bound
    (
        "busy GPU",
        Evidence(cpu=trace(40), memory=trace(30), gpu=trace(95, 3), gpu_memory=trace(60)),
        True,
        "compute-bound",
    ),
    (
        "GPU starved by busy CPU",
        Evidence(cpu=trace(97, 2), memory=trace(40), gpu=trace(5, 2), gpu_memory=trace(20)),
        True,
        "data-bound",
    ),
    (
        "GPU idle, I/O wait high",
        Evidence(cpu=trace(20), memory=trace(30), gpu=trace(15), gpu_memory=trace(20), io_wait=trace(70)),
        True,
        "io-bound",
    ),
    (
        "GPU memory full",
        Evidence(cpu=trace(50), memory=trace(40), gpu=trace(90), gpu_memory=trace(97, 1)),
        True,
        "memory-bound",
    ),
    (
        "host memory full",
        Evidence(cpu=trace(50), memory=trace(95, 2), gpu=trace(60), gpu_memory=trace(40)),
        True,
        "memory-bound",
    ),
    (
        "everything idle: small batch",
        Evidence(cpu=trace(20), memory=trace(20), gpu=trace(30), gpu_memory=trace(15)),
        True,
        "under-utilised",
    ),
    (
        "loader waits, CPU idle",
        Evidence(cpu=trace(20), memory=trace(30), gpu=trace(40), gpu_memory=trace(30), data_wait_fraction=0.45),
        True,
        "io-bound",
    ),
    (
        "loader waits, CPU busy",
        Evidence(cpu=trace(85), memory=trace(30), gpu=trace(40), gpu_memory=trace(30), data_wait_fraction=0.5),
        True,
        "data-bound",
    ),
    (
        "low GPU, busy host",
        Evidence(cpu=trace(80), memory=trace(60), gpu=trace(50), gpu_memory=trace(40)),
        True,
        "data-bound",
    ),
    (
        "fluctuating GPU, mostly busy",
        Evidence(cpu=trace(40), memory=trace(40), gpu=spiky(5, 95, 0.8), gpu_memory=trace(50)),
        True,
        "compute-bound",
    ),
    ("CPU-only job at full CPU", Evidence(cpu=trace(95, 2), memory=trace(30)), False, "compute-bound"),
    (
        "CPU-only job waiting on data",
        Evidence(cpu=trace(25), memory=trace(30), data_wait_fraction=0.6),
        False,
        "io-bound",
    ),
    ("CPU-only job idling", Evidence(cpu=trace(30), memory=trace(20)), False, "under-utilised"),
]


@pytest.mark.parametrize("name, evidence, has_gpu, bound", CASES, ids=[c[0] for c in CASES])
def test_classifier(name, evidence, has_gpu, bound):
    verdict = classify(evidence, has_gpu)
    assert verdict.bound == bound, verdict
    assert verdict.reasons


def test_sagemaker_units_are_normalised():
    spec = instance("ml.g5.12xlarge")  # 48 vCPUs, 4 GPUs
    evidence = Evidence.from_sagemaker({"CPUUtilization": [4800.0], "GPUUtilization": [360.0]}, spec)
    assert evidence.cpu == [100.0] and evidence.gpu == [90.0]


def verdict(bound: str) -> Verdict:
    return Verdict(bound, ["test"], {})


LADDER = [
    # bound, current type, count, loader workers -> step, type, count
    ("compute-bound", "ml.c5.xlarge", 1, 1, "gpu", "ml.g5.xlarge", 1),
    ("compute-bound", "ml.g4dn.xlarge", 1, 1, "bigger-gpu", "ml.g5.xlarge", 1),
    ("compute-bound", "ml.g5.2xlarge", 1, 1, "bigger-gpu", "ml.g6e.xlarge", 1),
    ("compute-bound", "ml.g6e.xlarge", 1, 1, "more-gpus-per-node", "ml.g6e.12xlarge", 1),
    ("compute-bound", "ml.p4d.24xlarge", 2, 1, "bigger-gpu", "ml.p4de.24xlarge", 2),
    ("compute-bound", "ml.p5e.48xlarge", 2, 1, "more-nodes", "ml.p5e.48xlarge", 4),
    ("data-bound", "ml.g5.8xlarge", 1, 1, "loader-workers", "ml.g5.8xlarge", 1),
    ("data-bound", "ml.g5.xlarge", 1, 3, "more-cpu", "ml.g5.2xlarge", 1),
    ("data-bound", "ml.g5.8xlarge", 1, 31, "offline-preprocessing", "ml.g5.8xlarge", 1),
    ("io-bound", "ml.p4d.24xlarge", 4, 8, "storage", "ml.p4d.24xlarge", 4),
    ("memory-bound", "ml.g5.2xlarge", 1, 1, "memory", "ml.g6e.xlarge", 1),
    ("under-utilised", "ml.g5.2xlarge", 2, 2, "batch-size", "ml.g5.2xlarge", 2),
]


@pytest.mark.parametrize(
    "bound, current, count, workers, step, expected, expected_count", LADDER, ids=[f"{c[0]} on {c[1]}" for c in LADDER]
)
def test_ladder(bound, current, count, workers, step, expected, expected_count):
    recommendation = next_step(verdict(bound), current, count, workers)
    assert (recommendation.step, recommendation.instance_type, recommendation.instance_count) == (
        step,
        expected,
        expected_count,
    )
    assert recommendation.reason and recommendation.changes


def test_ladder_prefers_vertical_before_horizontal():
    """Climbing from one A10G never adds a node before a node is full of the strongest GPUs."""
    current, count, steps = "ml.g5.xlarge", 1, []
    for _ in range(12):
        recommendation = next_step(verdict("compute-bound"), current, count)
        steps.append(recommendation.step)
        current, count = recommendation.instance_type, recommendation.instance_count
        if recommendation.step == "more-nodes":
            break
    assert steps[-1] == "more-nodes" and current == "ml.p5e.48xlarge" and "more-nodes" not in steps[:-1]


def test_unknown_instance_type_is_rejected():
    with pytest.raises(SpecError, match="instance_type: is not in the scaling ladder's table"):
        next_step(verdict("compute-bound"), "ml.x99.large", 1)
