"""scikit-learn's digits images (bundled with scikit-learn: no download), split and staged to S3."""

from __future__ import annotations

import io

# A flattened "0" from the digits data (8x8, in [0, 1]): what a client (endpoint) or an edge app would classify.
SAMPLE_ZERO = [
    [
        0,
        0,
        0.3125,
        0.8125,
        0.5625,
        0.0625,
        0,
        0,
        0,
        0,
        0.8125,
        0.9375,
        0.625,
        0.9375,
        0.3125,
        0,
        0,
        0.1875,
        0.9375,
        0.125,
        0,
        0.6875,
        0.5,
        0,
        0,
        0.25,
        0.75,
        0,
        0,
        0.5,
        0.5,
        0,
        0,
        0.3125,
        0.5,
        0,
        0,
        0.5625,
        0.5,
        0,
        0,
        0.25,
        0.6875,
        0,
        0.0625,
        0.75,
        0.4375,
        0,
        0,
        0.125,
        0.875,
        0.3125,
        0.625,
        0.75,
        0,
        0,
        0,
        0,
        0.375,
        0.8125,
        0.625,
        0,
        0,
        0,
    ]
]


def digits_splits(seed: int = 7, test_fraction: float = 0.2) -> dict[str, dict]:
    """Stratified train/test split: {"train": {"images", "labels"}, "test": {...}}."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.images.astype("uint8"),
        digits.target.astype("int64"),
        test_size=test_fraction,
        random_state=seed,
        stratify=digits.target,
    )
    return {"train": {"images": x_train, "labels": y_train}, "test": {"images": x_test, "labels": y_test}}


def stage_digits(s3_client, bucket: str, prefix: str, seed: int = 7, eval_csv: bool = False) -> dict:
    """Write train/ and test/ as .npz objects under s3://bucket/prefix; return their URIs and counts.

    With `eval_csv`, also the test split as Batch Transform input: eval/features/ (one line of 64 values in
    [0, 1] per image, what the served model takes) and eval/labels/ (one label per line, in the same order).
    """
    import numpy as np

    result: dict = {}
    splits = digits_splits(seed)
    if eval_csv:
        test = splits["test"]
        for name, array, fmt in (
            ("features", test["images"].reshape(len(test["images"]), -1) / 16.0, "%.4f"),
            ("labels", test["labels"], "%d"),
        ):
            text = io.StringIO()
            np.savetxt(text, array, delimiter=",", fmt=fmt)
            s3_client.put_object(
                Bucket=bucket, Key=f"{prefix.strip('/')}/eval/{name}/{name}-0.csv", Body=text.getvalue().encode()
            )
        result["eval"] = f"s3://{bucket}/{prefix.strip('/')}/eval/"
    for split, arrays in splits.items():
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        key = f"{prefix.strip('/')}/{split}/digits.npz"
        s3_client.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
        result[split] = f"s3://{bucket}/{prefix.strip('/')}/{split}/"
        result[f"{split}_records"] = int(len(arrays["labels"]))
    return result
