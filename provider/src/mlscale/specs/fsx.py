"""FSxLustreSpec: a Lustre file system linked to an S3 prefix, for training to read as a file system channel."""

from __future__ import annotations

from dataclasses import dataclass, field

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import is_int, require

# PerUnitStorageThroughput (MB/s/TiB) each persistent deployment type takes (FSx for Lustre API reference)
TIERS = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}


@dataclass
class FSxLustreSpec:
    data_repository_path: str  # s3://bucket/prefix/ the association imports
    subnet_id: str
    security_group_ids: list[str] = field(default_factory=list)
    storage_capacity_gib: int = 1200
    deployment_type: str = "SCRATCH_2"
    per_unit_storage_throughput: int | None = None
    file_system_path: str = "/data"  # where the association appears under the mount

    template_fields = (
        "data_repository_path",
        "subnet_id",
        "security_group_ids",
        "storage_capacity_gib",
        "deployment_type",
        "per_unit_storage_throughput",
        "file_system_path",
    )

    def validate(self) -> None:
        coerce_fields(self)
        rules.s3_uri(self.data_repository_path, "data_repository_path")
        require(
            self.deployment_type in ("SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"),
            "deployment_type",
            "must be SCRATCH_2, PERSISTENT_1 or PERSISTENT_2 (SCRATCH_1 takes no data repository association)",
            self.deployment_type,
        )
        capacity = self.storage_capacity_gib
        require(
            is_int(capacity) and (capacity == 1200 or (capacity > 0 and capacity % 2400 == 0)),
            "storage_capacity_gib",
            "must be 1200 or a multiple of 2400",
            capacity,
        )
        if self.deployment_type in TIERS:
            require(
                self.per_unit_storage_throughput in TIERS[self.deployment_type],
                "per_unit_storage_throughput",
                f"must be one of {TIERS[self.deployment_type]} for {self.deployment_type}",
                self.per_unit_storage_throughput,
            )
        require(bool(self.subnet_id), "subnet_id", "is required: Lustre lives in one subnet (one Availability Zone)")
        require(
            isinstance(self.security_group_ids, list) and len(self.security_group_ids) <= 50,
            "security_group_ids",
            "must be a list of at most 50 security group ids",
            self.security_group_ids,
        )
        require(
            self.file_system_path.startswith("/")
            and self.file_system_path != "/"
            and ".." not in self.file_system_path.split("/"),
            "file_system_path",
            "must be an absolute path below /",
            self.file_system_path,
        )
