"""SageMaker training instance types the scaling ladder climbs (published specs, per instance)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: int
    gpu_model: str
    gpu_memory_gib: int  # per GPU
    vcpus: int
    memory_gib: int
    network_gbps: int
    tier: int  # GPU generation/strength, for "a bigger GPU"; 0 = CPU only


INSTANCES = {
    i.name: i
    for i in [
        InstanceType("ml.m5.xlarge", 0, "-", 0, 4, 16, 10, 0),
        InstanceType("ml.c5.xlarge", 0, "-", 0, 4, 8, 10, 0),
        InstanceType("ml.c5.4xlarge", 0, "-", 0, 16, 32, 10, 0),
        InstanceType("ml.g4dn.xlarge", 1, "T4", 16, 4, 16, 25, 1),
        InstanceType("ml.g4dn.12xlarge", 4, "T4", 16, 48, 192, 50, 1),
        InstanceType("ml.g5.xlarge", 1, "A10G", 24, 4, 16, 10, 2),
        InstanceType("ml.g5.2xlarge", 1, "A10G", 24, 8, 32, 10, 2),
        InstanceType("ml.g5.8xlarge", 1, "A10G", 24, 32, 128, 25, 2),
        InstanceType("ml.g5.12xlarge", 4, "A10G", 24, 48, 192, 40, 2),
        InstanceType("ml.g5.48xlarge", 8, "A10G", 24, 192, 768, 100, 2),
        InstanceType("ml.g6e.xlarge", 1, "L40S", 48, 4, 32, 20, 3),
        InstanceType("ml.g6e.12xlarge", 4, "L40S", 48, 48, 384, 100, 3),
        InstanceType("ml.g6e.48xlarge", 8, "L40S", 48, 192, 1536, 400, 3),
        InstanceType("ml.p4d.24xlarge", 8, "A100", 40, 96, 1152, 400, 4),
        InstanceType("ml.p4de.24xlarge", 8, "A100", 80, 96, 1152, 400, 4),
        InstanceType("ml.p5.48xlarge", 8, "H100", 80, 192, 2048, 3200, 5),
        InstanceType("ml.p5e.48xlarge", 8, "H200", 141, 192, 2048, 3200, 6),
    ]
}


def instance(name: str) -> InstanceType:
    if name not in INSTANCES:
        from mlscale.specs.errors import SpecError

        raise SpecError("instance_type", f"is not in the scaling ladder's table ({', '.join(sorted(INSTANCES))})", name)
    return INSTANCES[name]


def bigger_gpu(current: InstanceType) -> InstanceType | None:
    """The same number of GPUs, one step stronger (or more memory)."""
    options = [
        i
        for i in INSTANCES.values()
        if i.gpus == max(current.gpus, 1) and (i.tier, i.gpu_memory_gib) > (current.tier, current.gpu_memory_gib)
    ]
    return min(options, key=lambda i: (i.tier, i.gpu_memory_gib, i.vcpus), default=None)


def more_gpus(current: InstanceType) -> InstanceType | None:
    """The same GPU, more of them in one node (NVLink/PCIe beats the network)."""
    options = [i for i in INSTANCES.values() if i.gpu_model == current.gpu_model and i.gpus > current.gpus]
    return min(options, key=lambda i: i.gpus, default=None)


def more_cpu_per_gpu(current: InstanceType) -> InstanceType | None:
    options = [
        i
        for i in INSTANCES.values()
        if i.gpu_model == current.gpu_model and i.gpus == current.gpus and i.vcpus > current.vcpus
    ]
    return min(options, key=lambda i: i.vcpus, default=None)


def more_gpu_memory(current: InstanceType) -> InstanceType | None:
    options = [
        i for i in INSTANCES.values() if i.gpus >= max(current.gpus, 1) and i.gpu_memory_gib > current.gpu_memory_gib
    ]
    return min(options, key=lambda i: (i.gpus, i.gpu_memory_gib, i.tier), default=None)
