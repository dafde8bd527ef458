"""Which engine should prepare the data: Athena (SQL) with one Processing instance sharding, or Spark?

The whitepaper's data path: Athena for what SQL expresses, Spark (AWS Glue or Amazon EMR) for transforms SQL
does not express and for data too large for one machine: Spark partitions the dataset in one pass into an
equal number of files, spilling to disk, where a single sharding instance must hold it in memory. Athena
bills the data it scans ($5 per TB: https://aws.amazon.com/athena/pricing/), a Glue Spark job its workers'
DPU-hours ($0.44 per DPU-hour, billed per second with a 1-minute minimum: https://aws.amazon.com/glue/pricing/;
a G.1X worker is 1 DPU), so for data that fits, one query and one instance cost less than a cluster.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mlscale.specs.errors import SpecError

GB = 1_000_000_000
# Parquet is compressed: the records take about this many times the bytes once decoded in memory
DECODED_EXPANSION = 3.0
# one instance shards in memory: the records, their resized copy and the shuffle's permutation, with headroom
MEMORY_SHARE = 0.5
TRANSFORMS = ("sql", "python")


@dataclass(frozen=True)
class DataNeeds:
    raw_bytes: int  # the Parquet objects of the run's window
    transform: str = "sql"  # "sql": SQL expresses it (Athena can run it); "python": it needs code (Spark)
    instance_memory_bytes: int = 16 * 1024**3  # the sharding Processing instance (ml.m5.xlarge: 16 GiB)

    def validate(self) -> None:
        if self.raw_bytes < 0:
            raise SpecError("raw_bytes", "must be >= 0", self.raw_bytes)
        if self.transform not in TRANSFORMS:
            raise SpecError("transform", f"must be one of {', '.join(TRANSFORMS)}", self.transform)
        if self.instance_memory_bytes <= 0:
            raise SpecError("instance_memory_bytes", "must be > 0", self.instance_memory_bytes)


@dataclass(frozen=True)
class EngineChoice:
    engine: str  # "athena" or "spark"
    reason: str
    decoded_bytes: int
    memory_limit_bytes: int

    def to_dict(self) -> dict:
        return asdict(self)


def advise_engine(needs: DataNeeds) -> EngineChoice:
    needs.validate()
    decoded = int(needs.raw_bytes * DECODED_EXPANSION)
    limit = int(needs.instance_memory_bytes * MEMORY_SHARE)
    size = f"{needs.raw_bytes / GB:.2f} GB of Parquet (~{decoded / GB:.2f} GB decoded)"
    if needs.transform == "python":
        return EngineChoice(
            "spark",
            f"the transform needs Python code, which SQL does not express: a Spark job runs it ({size})",
            decoded,
            limit,
        )
    if decoded > limit:
        return EngineChoice(
            "spark",
            f"{size} is more than one sharding instance holds in memory ({limit / GB:.1f} GB of "
            f"{needs.instance_memory_bytes / GB:.1f} GB): Spark shards it in one pass, spilling to disk",
            decoded,
            limit,
        )
    return EngineChoice(
        "athena",
        f"SQL expresses the transform and {size} fits one sharding instance ({limit / GB:.1f} GB usable): "
        "one Athena query and one Processing job cost less than a Spark cluster",
        decoded,
        limit,
    )
