"""Is a training job data-, I/O-, compute- or memory-bound, and what is the next step of the ladder?

Thresholds follow SageMaker Debugger's built-in profiler rules (SageMaker
Developer Guide, "List of Debugger built-in profiler rules"):
LowGPUUtilization p95 < 70%, CPUBottleneck GPU < 10% while CPU > 90% for more
than half the time, IOBottleneck I/O wait > 50% with low GPU for more than
half the time, BatchSize p95 CPU, GPU and memory all < 70%. The ladder prefers
vertical before horizontal: fix the data pipeline first, then a bigger GPU,
then more GPUs in one node, then more nodes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from mlscale.advisors.instances import InstanceType, bigger_gpu, instance, more_cpu_per_gpu, more_gpu_memory, more_gpus

LOW_GPU_P95 = 70.0
IDLE_GPU = 10.0
BUSY_CPU = 90.0
IO_WAIT = 50.0
MOST_OF_THE_TIME = 0.5
MEMORY_FULL = 90.0
DATA_WAIT = 0.3  # the loader's own evidence: the step waited on data 30% of the time
SMALL_BATCH = 70.0


@dataclass
class Evidence:
    """Per-instance utilisation, normalised to 0-100 (CPU over all cores, GPU averaged over GPUs)."""

    cpu: list[float]
    memory: list[float] = field(default_factory=list)
    gpu: list[float] = field(default_factory=list)
    gpu_memory: list[float] = field(default_factory=list)
    io_wait: list[float] = field(default_factory=list)
    data_wait_fraction: float | None = None

    @classmethod
    def from_sagemaker(
        cls, metrics: dict[str, list[float]], spec: InstanceType, data_wait_fraction: float | None = None
    ) -> Evidence:
        """From CloudWatch's units: CPU summed over cores, GPU summed over GPUs."""
        cores, gpus = max(spec.vcpus, 1), max(spec.gpus, 1)
        return cls(
            cpu=[v / cores for v in metrics.get("CPUUtilization", [])],
            memory=list(metrics.get("MemoryUtilization", [])),
            gpu=[v / gpus for v in metrics.get("GPUUtilization", [])],
            gpu_memory=[v / gpus for v in metrics.get("GPUMemoryUtilization", [])],
            io_wait=list(metrics.get("IOWait", [])),
            data_wait_fraction=data_wait_fraction,
        )


@dataclass
class Verdict:
    bound: str  # data-bound | io-bound | compute-bound | memory-bound | under-utilised
    reasons: list[str]
    stats: dict[str, float]


@dataclass
class Recommendation:
    step: str
    instance_type: str
    instance_count: int
    changes: list[str]
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def _p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def _share(condition: np.ndarray) -> float:
    return float(condition.mean()) if condition.size else 0.0


def classify(evidence: Evidence, has_gpu: bool) -> Verdict:
    cpu, gpu = np.asarray(evidence.cpu, float), np.asarray(evidence.gpu, float)
    stats = {
        "cpu_p95": _p(evidence.cpu, 95),
        "cpu_p50": _p(evidence.cpu, 50),
        "memory_p95": _p(evidence.memory, 95),
        "gpu_p95": _p(evidence.gpu, 95),
        "gpu_p05": _p(evidence.gpu, 5),
        "gpu_memory_p95": _p(evidence.gpu_memory, 95),
        "io_wait_p50": _p(evidence.io_wait, 50),
    }
    if evidence.data_wait_fraction is not None:
        stats["data_wait_fraction"] = evidence.data_wait_fraction
    waits = (evidence.data_wait_fraction or 0) >= DATA_WAIT

    if stats["gpu_memory_p95"] >= MEMORY_FULL or stats["memory_p95"] >= MEMORY_FULL:
        which = "GPU memory" if stats["gpu_memory_p95"] >= MEMORY_FULL else "host memory"
        return Verdict(
            "memory-bound",
            [f"{which} p95 {max(stats['gpu_memory_p95'], stats['memory_p95']):.0f}% >= {MEMORY_FULL:.0f}%"],
            stats,
        )
    if has_gpu:
        n = min(len(cpu), len(gpu))
        io = np.asarray(evidence.io_wait[: len(gpu)], float)
        io_share = _share((io > IO_WAIT) & (gpu[: io.size] < LOW_GPU_P95)) if io.size else 0.0
        if io_share > MOST_OF_THE_TIME:
            return Verdict("io-bound", [f"I/O wait > {IO_WAIT:.0f}% with low GPU {io_share:.0%} of the time"], stats)
        cpu_share = _share((gpu[:n] < IDLE_GPU) & (cpu[:n] > BUSY_CPU)) if n else 0.0
        if cpu_share > MOST_OF_THE_TIME:
            return Verdict(
                "data-bound",
                [f"GPU < {IDLE_GPU:.0f}% while CPU > {BUSY_CPU:.0f}% {cpu_share:.0%} of the time (CPUBottleneck)"],
                stats,
            )
        if waits and stats["gpu_p95"] < LOW_GPU_P95:
            bound = "io-bound" if stats["cpu_p50"] < 50 else "data-bound"
            return Verdict(
                bound,
                [
                    f"the loader waited {evidence.data_wait_fraction:.0%} of the time and GPU p95 is "
                    f"{stats['gpu_p95']:.0f}% < {LOW_GPU_P95:.0f}%"
                ],
                stats,
            )
        if stats["gpu_p95"] >= LOW_GPU_P95:
            return Verdict("compute-bound", [f"GPU p95 {stats['gpu_p95']:.0f}% >= {LOW_GPU_P95:.0f}%"], stats)
        if max(stats["cpu_p95"], stats["gpu_p95"], stats["memory_p95"]) < SMALL_BATCH:
            return Verdict(
                "under-utilised",
                [f"CPU, GPU and memory p95 all < {SMALL_BATCH:.0f}% (BatchSize): the batch is too small for the GPU"],
                stats,
            )
        return Verdict(
            "data-bound",
            [f"GPU p95 {stats['gpu_p95']:.0f}% < {LOW_GPU_P95:.0f}% (LowGPUUtilization) and the host is busy"],
            stats,
        )
    # CPU-only training: the CPU is the compute
    if waits:
        bound = "io-bound" if stats["cpu_p50"] < 50 else "data-bound"
        return Verdict(bound, [f"the loader waited {evidence.data_wait_fraction:.0%} of the time"], stats)
    if stats["cpu_p95"] >= LOW_GPU_P95:
        return Verdict(
            "compute-bound", [f"CPU p95 {stats['cpu_p95']:.0f}% >= {LOW_GPU_P95:.0f}% on a CPU-only instance"], stats
        )
    return Verdict("under-utilised", [f"CPU p95 {stats['cpu_p95']:.0f}% < {SMALL_BATCH:.0f}%"], stats)


def next_step(verdict: Verdict, instance_type: str, instance_count: int, loader_workers: int = 1) -> Recommendation:
    """The next rung: the data pipeline first, then vertical (bigger GPU, more GPUs per node), then more nodes."""
    current = instance(instance_type)
    keep = (instance_type, instance_count)
    if verdict.bound == "io-bound":
        return Recommendation(
            "storage",
            *keep,
            [
                "stage the data on FSx for Lustre or stream it with FastFile (see the storage advisor)",
                "pack small files into 100 MB-1 GB shards",
            ],
            "the GPUs wait on reads: faster storage, not more compute",
        )
    if verdict.bound == "data-bound":
        per_gpu = current.vcpus // max(current.gpus, 1)
        if loader_workers < per_gpu - 1:
            workers = min(per_gpu - 1, max(2 * loader_workers, 2))
            return Recommendation(
                "loader-workers",
                *keep,
                [f"loader workers {loader_workers} -> {workers}"],
                f"{per_gpu} vCPUs per GPU leave room for more data-loading processes",
            )
        roomier = more_cpu_per_gpu(current) if current.gpus else None
        if roomier:
            return Recommendation(
                "more-cpu",
                roomier.name,
                instance_count,
                [
                    "move decoding/augmentation offline (preprocess once, before training)",
                    f"{current.name} -> {roomier.name} ({roomier.vcpus} vCPUs for the same GPUs)",
                ],
                "the CPUs cannot feed the GPUs",
            )
        return Recommendation(
            "offline-preprocessing",
            *keep,
            ["preprocess offline (resize, decode, augment once)"],
            "no instance with more vCPUs per GPU: take the work off the training loop",
        )
    if verdict.bound == "memory-bound":
        return Recommendation(
            "memory",
            (more_gpu_memory(current) or current).name,
            instance_count,
            [
                "train in mixed precision (bf16/fp16)",
                "enable gradient checkpointing",
                "if it still does not fit: a GPU with more memory",
            ],
            "memory, not compute, limits the batch",
        )
    if verdict.bound == "under-utilised":
        return Recommendation(
            "batch-size",
            *keep,
            ["double the batch size (scale the learning rate with it)"],
            "the hardware idles: give each step more work before buying more",
        )
    # compute-bound: vertical first
    if current.gpus == 0:
        gpu = instance("ml.g5.xlarge")
        return Recommendation(
            "gpu",
            gpu.name,
            instance_count,
            [f"{current.name} -> {gpu.name} (1 x {gpu.gpu_model})"],
            "compute-bound on CPUs: a GPU is the first step",
        )
    if (stronger := bigger_gpu(current)) is not None:
        return Recommendation(
            "bigger-gpu",
            stronger.name,
            instance_count,
            [f"{current.gpu_model} -> {stronger.gpu_model} ({stronger.gpu_memory_gib} GiB)"],
            "compute-bound: a stronger GPU before more of them",
        )
    if (wider := more_gpus(current)) is not None:
        return Recommendation(
            "more-gpus-per-node",
            wider.name,
            instance_count,
            [f"{current.gpus} -> {wider.gpus} x {wider.gpu_model} in one node"],
            "compute-bound on the strongest GPU: more GPUs in one node talk over NVLink",
        )
    return Recommendation(
        "more-nodes",
        instance_type,
        instance_count * 2,
        [f"instances {instance_count} -> {instance_count * 2} (scale the batch and learning rate)"],
        f"compute-bound on a full {current.name}: add nodes ({current.network_gbps} Gbps between them)",
    )
