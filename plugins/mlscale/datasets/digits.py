"""scikit-learn's digits images (bundled with scikit-learn: no download), split and staged to S3."""

from __future__ import annotations

import io


def digits_splits(seed: int = 7, test_fraction: float = 0.2) -> dict[str, dict]:
    """Stratified train/test split: {"train": {"images", "labels"}, "test": {...}}."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images.astype("uint8"), digits.target.astype("int64"),
        test_size=test_fraction, random_state=seed, stratify=digits.target,
    )  # fmt: skip
    return {"train": {"images": x_train, "labels": y_train}, "test": {"images": x_test, "labels": y_test}}


def stage_digits(s3_client, bucket: str, prefix: str, seed: int = 7) -> dict:
    """Write train/ and test/ as .npz objects under s3://bucket/prefix; return their URIs and counts."""
    import numpy as np

    result: dict = {}
    for split, arrays in digits_splits(seed).items():
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        key = f"{prefix.strip('/')}/{split}/digits.npz"
        s3_client.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
        result[split] = f"s3://{bucket}/{prefix.strip('/')}/{split}/"
        result[f"{split}_records"] = int(len(arrays["labels"]))
    return result
