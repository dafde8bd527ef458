"""Where one run's data lives, and which days it trains on."""

from __future__ import annotations

from typing import Any

from mlscale.naming import run_slug


def training_window(start, end, run_after, days: int = 7):
    """The days to train on (pendulum datetimes): the data interval, or the `days` before a run that has none.

    Airflow 3's @weekly runs have zero-width intervals, and a run triggered without a
    logical date (the REST API's or `airflow dags trigger`'s default) or by an asset has no interval at all.
    """
    if start is None or end is None or end <= start:
        end = (end or run_after).start_of("day")
        return end.subtract(days=days), end
    return start.start_of("day"), end.start_of("day")


def model_version(end, run_after) -> str:
    """Orders the deploys of runs to one endpoint and fleet: newer data wins; for the same data, the later run."""
    return f"{end.to_date_string()}/{run_after.in_timezone('UTC').to_iso8601_string()}"


def run_layout(bucket: str, run_id: str, start, end) -> dict[str, Any]:
    """Every prefix one run writes, keyed for the DAG's XComArgs; the seed shuffles the window's shards."""
    etl = f"s3://{bucket}/mlscale/etl/{run_slug(run_id)}/"
    run = f"s3://{bucket}/mlscale/runs/{run_slug(run_id)}"
    return {
        "window_start": start.to_date_string(),
        "window_end": end.to_date_string(),
        "seed": int(start.format("YYYYMMDD")),
        "etl_prefix": etl,
        "run_prefix": run,
        "shards_uri": f"{run}/shards/train/",
        "test_uri": f"{run}/shards/test/",
        "eval_uri": f"{run}/eval/",
        "eval_features_uri": f"{run}/eval/features/",
        "eval_labels_uri": f"{run}/eval/labels/",
        "evaluation_uri": f"{run}/evaluation/",
        "compiled_uri": f"{run}/compiled/",
    }
