"""Parquet row counts and schemas come from the footers alone: ranged GETs, never whole objects (moto)."""

from __future__ import annotations

import io

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from moto import mock_aws

from mlscale.aws.catalog import parquet_stats
from mlscale.aws.lineage import parquet_schema


def _ranges_read(s3) -> list[str | None]:
    """The Range of every GetObject the client sends from now on (None for a whole-object GET)."""
    seen: list[str | None] = []
    s3.meta.events.register("provide-client-params.s3.GetObject", lambda params, **_: seen.append(params.get("Range")))
    return seen


@mock_aws
def test_parquet_stats_counts_rows_from_footers_without_downloading_the_objects():
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="raw")
    sizes = {}
    for day, rows in (("2025-01-01", 3_000), ("2025-01-02", 5_000)):
        table = pa.table(
            {"record_id": [f"{day}-{i}" for i in range(rows)], "pixels": [np.random.bytes(512) for _ in range(rows)]}
        )
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="none")
        key = f"digits/dt={day}/part-00000.parquet"
        s3.put_object(Bucket="raw", Key=key, Body=buffer.getvalue())
        sizes[key] = buffer.tell()
    s3.put_object(Bucket="raw", Key="digits/_SUCCESS", Body=b"")  # Spark's marker: not data
    ranges = _ranges_read(s3)

    stats = parquet_stats(s3, "s3://raw/digits/")

    assert stats == {"objects": 2, "bytes": sum(sizes.values()), "rows": 8_000}
    assert ranges and None not in ranges  # every read is ranged
    fetched = sum(int(end) - int(start) + 1 for start, end in (r.removeprefix("bytes=").split("-") for r in ranges))
    assert fetched < min(sizes.values()) // 10  # footers: a small part of either 1.5 MB object
    assert parquet_schema(s3, "s3://raw/digits/") == [
        {"name": "record_id", "type": "string"},
        {"name": "pixels", "type": "binary"},
    ]
