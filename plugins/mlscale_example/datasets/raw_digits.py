"""Raw example records for the pipeline: scikit-learn's digits, augmented, one partition per day.

Each day holds different data (its own seed: shifts, noise, contrast), and
images are stored at 16x16, twice the resolution the model uses, so that the
pipeline resizes them once before training rather than every epoch.

    s3://<bucket>/<prefix>/dt=YYYY-MM-DD/part-00000.parquet
    columns: record_id string, label int64, pixels binary (256 bytes, 16x16 uint8, row-major)

It stands in for the upstream systems that write raw data; it runs in the Airflow worker (numpy, pyarrow,
scikit-learn), not in a job.
"""

from __future__ import annotations

import hashlib
import io
from datetime import date

RESOLUTION = 16


def day_seed(day: date) -> int:
    return int(hashlib.sha256(day.isoformat().encode()).hexdigest()[:8], 16)


def generate_day(day: date, records: int):
    """A pyarrow Table of `records` augmented 16x16 digits for one day."""
    import numpy as np
    import pyarrow as pa
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(day_seed(day))
    picks = rng.integers(0, len(digits.target), size=records)
    images = digits.images[picks] / 16.0  # (n, 8, 8) in [0, 1]
    images = images.repeat(2, axis=1).repeat(2, axis=2)  # upscale to 16x16
    shifts = rng.integers(-1, 2, size=(records, 2))
    for axis in (0, 1):  # roll each image by -1, 0 or +1 pixels along each axis
        for shift in (-1, 1):
            chosen = shifts[:, axis] == shift
            images[chosen] = np.roll(images[chosen], shift, axis=axis + 1)
    contrast = rng.uniform(0.8, 1.2, size=(records, 1, 1))
    noise = rng.normal(0, 0.03, size=images.shape)
    pixels = np.clip((images * contrast + noise) * 255, 0, 255).astype(np.uint8).reshape(records, -1)
    ids = [f"{day:%Y%m%d}-{i:08d}" for i in range(records)]
    return pa.table(
        {
            "record_id": pa.array(ids, pa.string()),
            "label": pa.array(digits.target[picks].astype("int64")),
            "pixels": pa.array([row.tobytes() for row in pixels], pa.binary()),
        }
    )


def write_day(s3_client, bucket: str, prefix: str, day: date, records: int) -> dict:
    """Write one day's partition as Parquet; return its key, record and byte counts."""
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(generate_day(day, records), buffer, compression="zstd")
    key = f"{prefix.strip('/')}/dt={day:%Y-%m-%d}/part-00000.parquet"
    s3_client.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
    return {"key": key, "records": records, "bytes": buffer.tell()}
