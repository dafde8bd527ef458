"""Where should training read its data from? S3 (File / FastFile), FSx for Lustre, or EFS.

The whitepaper's rule: do not move data that S3 can serve. File mode copies
the dataset to every instance before training and is fine below ~50 GB;
FastFile streams from S3 and is fine while S3's request budget (5,500 GET/s
per prefix) and large objects can feed the GPUs; past that, a parallel file
system (FSx for Lustre) sized for the throughput. Figures: Amazon S3 User Guide, "Best practices design
patterns: optimizing Amazon S3 performance"; Amazon FSx for Lustre User Guide, "Performance".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from mlscale.specs.errors import SpecError

MB = 1_000_000
GB = 1_000_000_000
GIB = 1024**3
TIB_GIB = 1024

FILE_MODE_MAX_BYTES = 50 * GB  # File mode is fine below 50-100 GB: take the cautious end
S3_GETS_PER_PREFIX = 5_500  # GET/HEAD per second per partitioned prefix
S3_PART_BYTES = 8 * 1024 * 1024  # s3transfer's chunk: one GET per 8 MiB of a large object
SMALL_OBJECT_BYTES = 50 * MB  # objects under this are worth packing into ~150 MB+ shards
MIN_SHARD_BYTES = 150 * MB
S3_HEADROOM = 0.5  # plan on half the request budget: other readers share the prefix
SCRATCH_2_MBPS_PER_TIB = 200
PERSISTENT_2_TIERS = (125, 250, 500, 1000)  # MB/s per TiB
FIRST_STEP_GIB, NEXT_STEP_GIB = 1200, 2400  # 1.2 TiB, then steps of 2.4 TiB (SSD scratch/persistent)


@dataclass(frozen=True)
class StorageNeeds:
    dataset_bytes: int
    object_count: int
    epochs: int
    instances: int
    gpus_per_instance: int
    samples_per_second_per_gpu: float
    bytes_per_sample: float
    s3_prefixes: int = 1
    reuse_across_jobs: bool = False  # keep the file system between jobs: PERSISTENT_2
    data_on_efs: bool = False

    @property
    def required_bytes_per_second(self) -> float:
        return self.instances * self.gpus_per_instance * self.samples_per_second_per_gpu * self.bytes_per_sample

    def validate(self) -> None:
        checks = [
            ("dataset_bytes", self.dataset_bytes > 0, "must be > 0"),
            ("object_count", self.object_count >= 1, "must be >= 1"),
            ("epochs", 1 <= self.epochs <= 10_000, "must be from 1 to 10000"),
            ("instances", 1 <= self.instances <= 1_000, "must be from 1 to 1000"),
            (
                "gpus_per_instance",
                1 <= self.gpus_per_instance <= 64,
                "must be from 1 to 64 (count a CPU instance as 1)",
            ),
            ("samples_per_second_per_gpu", self.samples_per_second_per_gpu > 0, "must be > 0"),
            ("bytes_per_sample", self.bytes_per_sample > 0, "must be > 0"),
            ("s3_prefixes", self.s3_prefixes >= 1, "must be >= 1"),
        ]
        for field, ok, rule in checks:
            if not ok:
                raise SpecError(field, rule, getattr(self, field))


@dataclass(frozen=True)
class StorageChoice:
    storage: str  # "s3" | "fsx_lustre" | "efs"
    input_mode: str | None  # "File" | "FastFile" for S3; None for file systems
    reason: str
    required_mb_per_s: float
    s3_capacity_mb_per_s: float
    fsx_deployment_type: str | None = None
    fsx_storage_capacity_gib: int | None = None
    fsx_throughput_mb_per_s_per_tib: int | None = None
    pack_into_shards: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _size(num_bytes: float) -> str:
    return f"{num_bytes / GB:.1f} GB" if num_bytes >= GB else f"{num_bytes / MB:.1f} MB"


def fsx_capacity_gib(needed_gib: float) -> int:
    """Round up to a valid SSD Lustre size: 1200 GiB, then multiples of 2400 GiB."""
    if needed_gib <= FIRST_STEP_GIB:
        return FIRST_STEP_GIB
    return NEXT_STEP_GIB * math.ceil(needed_gib / NEXT_STEP_GIB)


def s3_capacity_bytes_per_second(needs: StorageNeeds) -> float:
    """What S3 can stream within its GET budget, given the objects' size."""
    average_object = needs.dataset_bytes / needs.object_count
    return S3_GETS_PER_PREFIX * needs.s3_prefixes * min(average_object, S3_PART_BYTES) * S3_HEADROOM


def advise_storage(needs: StorageNeeds) -> StorageChoice:
    needs.validate()
    required = needs.required_bytes_per_second
    s3_capacity = s3_capacity_bytes_per_second(needs)
    average_object = needs.dataset_bytes / needs.object_count
    # Packing only helps when there is enough data to fill a shard of the recommended size.
    small_objects = average_object < SMALL_OBJECT_BYTES and needs.dataset_bytes >= MIN_SHARD_BYTES
    common = dict(
        required_mb_per_s=round(required / MB, 1),
        s3_capacity_mb_per_s=round(s3_capacity / MB, 1),
        pack_into_shards=small_objects,
    )
    shard_note = (
        f" Objects average {average_object / MB:.1f} MB: pack them into ~150 MB-1 GB shards." if small_objects else ""
    )

    if needs.data_on_efs:
        return StorageChoice(
            "efs",
            None,
            "The data already lives on EFS: mount it (FileSystemDataSource) rather than copy it." + shard_note,
            **common,
        )
    if needs.dataset_bytes <= FILE_MODE_MAX_BYTES:
        return StorageChoice(
            "s3",
            "File",
            f"{_size(needs.dataset_bytes)} fits File mode (below "
            f"{FILE_MODE_MAX_BYTES / GB:.0f} GB): each instance copies it once and reads it "
            "locally every epoch." + shard_note,
            **common,
        )
    if required <= s3_capacity and not small_objects:
        return StorageChoice(
            "s3",
            "FastFile",
            f"Training needs {required / MB:.0f} MB/s; S3 can stream "
            f"{s3_capacity / MB:.0f} MB/s from {needs.s3_prefixes} prefix(es) with "
            f"{average_object / MB:.0f} MB objects, so stream it with FastFile: no copy, "
            "no file system to pay for.",
            **common,
        )
    return _fsx_choice(needs, required, s3_capacity, small_objects, shard_note, common)


def _fsx_choice(needs, required, s3_capacity, small_objects, shard_note, common) -> StorageChoice:
    data_gib = needs.dataset_bytes / GIB
    required_mbps = required / MB
    why_not_s3 = (
        f"{needs.object_count} objects averaging {needs.dataset_bytes / needs.object_count / MB:.1f} MB "
        "spend S3's request budget"
        if small_objects and required <= s3_capacity
        else f"training needs {required_mbps:.0f} MB/s, more than S3's ~{s3_capacity / MB:.0f} MB/s"
    )
    if needs.reuse_across_jobs:
        capacity = fsx_capacity_gib(data_gib)
        for tier in PERSISTENT_2_TIERS:
            if capacity / TIB_GIB * tier >= required_mbps:
                break
        else:
            tier = PERSISTENT_2_TIERS[-1]
            capacity = fsx_capacity_gib(required_mbps / tier * TIB_GIB)
        deployment = "PERSISTENT_2"
    else:
        tier = SCRATCH_2_MBPS_PER_TIB
        capacity = fsx_capacity_gib(max(data_gib, required_mbps / tier * TIB_GIB))
        deployment = "SCRATCH_2"
    throughput = capacity / TIB_GIB * tier
    reason = (
        f"{needs.dataset_bytes / GB:.0f} GB is past File mode and {why_not_s3}: stage it to FSx for "
        f"Lustre {deployment}, {capacity} GiB at {tier} MB/s/TiB = {throughput:.0f} MB/s"
        f"{' (kept between jobs)' if needs.reuse_across_jobs else ' (deleted after training)'}." + shard_note
    )
    return StorageChoice(
        "fsx_lustre",
        None,
        reason,
        fsx_deployment_type=deployment,
        fsx_storage_capacity_gib=capacity,
        fsx_throughput_mb_per_s_per_tib=tier,
        **common,
    )
