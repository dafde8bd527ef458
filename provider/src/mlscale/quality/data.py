"""Load the records a quality check profiles: Parquet objects under an S3 prefix."""

from __future__ import annotations

import io

import numpy as np


def load_images(s3, uri: str, label_column: str = "label", pixels_column: str = "pixels"):
    """(labels, images in [0, 1] as (n, side, side)) from every Parquet object under `uri`."""
    import pyarrow.parquet as pq

    from mlscale.aws.s3_objects import is_data_key

    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    labels, images = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if not is_data_key(item["Key"]):
                continue
            table = pq.read_table(
                io.BytesIO(s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()),
                columns=[label_column, pixels_column],
            )
            labels.append(table.column(label_column).to_numpy(zero_copy_only=False))
            raw = [np.frombuffer(v, dtype=np.uint8) for v in table.column(pixels_column).to_pylist() if v is not None]
            images.append(np.stack(raw) if raw else np.zeros((0, 0), np.uint8))
    if not labels:
        return np.zeros(0, np.int64), np.zeros((0, 1, 1))
    flat = np.concatenate([i for i in images if i.size]) if any(i.size for i in images) else np.zeros((0, 1))
    side = int(round(flat.shape[1] ** 0.5)) if flat.size else 1
    return np.concatenate(labels), flat.reshape(-1, side, side).astype(np.float32) / 255.0
