"""How many shards: big enough to read sequentially, enough to keep every reader busy."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from mlscale.specs.errors import SpecError
from mlscale.specs.rules import is_int

MB = 1_000_000
TARGET_SHARD_BYTES = 256 * MB  # within the 100 MB - 1 GB the whitepaper and WebDataset practice suggest
MAX_SHARD_BYTES = 1000 * MB


@dataclass(frozen=True)
class ShardPlan:
    shards: int
    records_per_shard: int
    bytes_per_shard: int
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


def plan_shards(
    dataset_bytes: int,
    records: int,
    instances: int,
    loader_workers: int = 1,
    target_shard_bytes: int = TARGET_SHARD_BYTES,
) -> ShardPlan:
    """Shards of about `target_shard_bytes`, at least one per reader on every instance: each loader worker, or the
    training process itself when it loads without workers (`loader_workers` 0)."""
    for field, value, low in (
        ("dataset_bytes", dataset_bytes, 1),
        ("records", records, 1),
        ("instances", instances, 1),
        ("loader_workers", loader_workers, 0),
        ("target_shard_bytes", target_shard_bytes, 1),
    ):
        if not is_int(value) or value < low:
            raise SpecError(field, f"must be an integer >= {low}", value)
    per_instance = max(1, loader_workers)
    readers = instances * per_instance
    by_size = math.ceil(dataset_bytes / min(target_shard_bytes, MAX_SHARD_BYTES))
    shards = min(max(by_size, readers), records)
    if shards == readers and by_size < readers:
        who = f"{loader_workers} loader worker(s)" if loader_workers else "the training process"
        why = f"one per reader ({instances} instance(s) x {who}); the data is small"
    else:
        why = f"about {target_shard_bytes // MB} MB each, read front to back"
    return ShardPlan(shards, math.ceil(records / shards), math.ceil(dataset_bytes / shards), f"{shards} shards: {why}")
