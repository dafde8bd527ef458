"""Where one run's data lives, and which days it trains on."""

from __future__ import annotations

from datetime import date
from typing import Any

from mlscale.naming import resource_name, run_slug


def training_window(start, end, run_after, days: int = 7, arrived: list[date] | None = None):
    """The days to train on (pendulum datetimes): the `days` ending with the newest arrived day when new data
    started the run, else the data interval, or the `days` before a run that has none.

    Airflow 3's @weekly runs have zero-width intervals, and a run triggered without a
    logical date (the REST API's or `airflow dags trigger`'s default) or by an asset has no interval at all.
    """
    import pendulum

    if arrived:
        newest = max(arrived)
        end = pendulum.datetime(newest.year, newest.month, newest.day, tz="UTC").add(days=1)
        return end.subtract(days=days), end
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
        # training_backend=batch: the run's own cluster stack (CloudFormation names: letters, digits, '-')
        "cluster_stack": resource_name("mlscale", "cluster", run_id),
    }


def plan_run_window(
    bucket: str, params: dict, interval_start, interval_end, dag_run, triggering_asset_events
) -> dict[str, Any]:
    """The example pipeline's first task: its params checked, its window, the window's `_SUCCESS` markers (what
    `wait_for_data` waits for), the prefixes it writes, and the version its deploys carry."""
    import pendulum

    from mlscale_example.pipeline.params import check_run_params
    from mlscale_example.pipeline.raw_data import arrived_days, marker_uris, partition_uris

    check_run_params(params)
    run_after = pendulum.instance(dag_run.run_after)
    arrived = arrived_days(triggering_asset_events)
    start, end = training_window(interval_start, interval_end, run_after, arrived=arrived)
    markers = marker_uris(bucket, start.date(), end.date())
    if arrived:
        print(
            f"new data arrived for {', '.join(d.isoformat() for d in arrived)}: training on "
            f"{start.to_date_string()}..{end.subtract(days=1).to_date_string()}"
        )
    return {
        **run_layout(bucket, dag_run.run_id, start, end),
        "arrived": [d.isoformat() for d in arrived],
        "partition_markers": markers,
        "partition_prefixes": partition_uris(bucket, start.date(), end.date()),
        "model_version": model_version(end, run_after),
    }
