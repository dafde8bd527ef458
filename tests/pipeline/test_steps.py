"""The example pipeline's steps that are not AWS stages: windows, layout, plans, channels, targets."""

from __future__ import annotations

import re

import pendulum
import pytest

from mlscale_example.pipeline.layout import run_layout, training_window
from mlscale_example.pipeline.steps import deploy_tasks, plan_training_data, training_channels


def test_training_window_is_the_interval_or_the_week_before_a_run_without_one():
    sunday = pendulum.datetime(2026, 10, 18, tz="UTC")
    week_before = (pendulum.datetime(2026, 10, 11, tz="UTC"), sunday)
    assert training_window(sunday, sunday, sunday) == week_before  # Airflow 3's @weekly: zero width
    assert training_window(None, None, sunday.add(hours=9)) == week_before  # triggered without a date
    interval = (pendulum.datetime(2026, 10, 1, 6, tz="UTC"), pendulum.datetime(2026, 10, 4, 6, tz="UTC"))
    assert training_window(*interval, sunday) == (interval[0].start_of("day"), interval[1].start_of("day"))


def test_run_layout_keeps_each_run_apart():
    start, end = pendulum.datetime(2026, 10, 11, tz="UTC"), pendulum.datetime(2026, 10, 18, tz="UTC")
    layout = run_layout("bucket-1", "manual__2026-10-18T09:00:00+00:00", start, end)
    assert layout["etl_prefix"] == "s3://bucket-1/mlscale/etl/manual-2026-10-18T09-00-00-00-00/"
    assert layout["shards_uri"].startswith(layout["run_prefix"]) and layout["seed"] == 20261011
    assert (layout["window_start"], layout["window_end"]) == ("2026-10-11", "2026-10-18")
    other = run_layout("bucket-1", "scheduled__2026-10-18T00:00:00+00:00", start, end)
    assert not set(layout.values()) & {v for k, v in other.items() if k.endswith(("uri", "prefix"))}


def test_deploy_targets_follow_the_param_and_backfills_deploy_nothing():
    assert deploy_tasks("manual", "edge") == ["deploy_edge"]
    assert deploy_tasks("scheduled", "both") == ["deploy_endpoint", "deploy_edge"]
    assert deploy_tasks("manual", "none") == []
    assert deploy_tasks("backfill", "both") == []


def test_training_channels_read_fsx_when_staged():
    s3 = training_channels("s3://b1/train/", "s3://b1/test/", {"file_system_id": None}, "subnet-1", "sg-1")
    assert s3 == {
        "inputs": {"train": "s3://b1/train/", "test": "s3://b1/test/"},
        "subnets": [],
        "security_group_ids": [],
    }
    fsx = training_channels(
        "s3://b1/train/", "s3://b1/test/", {"file_system_id": "fs-1", "directory_path": "/m/shards"}, "subnet-1", "sg-1"
    )
    assert fsx["inputs"]["train"] == {"file_system_id": "fs-1", "directory_path": "/m/shards"}
    assert fsx["subnets"] == ["subnet-1"] and fsx["security_group_ids"] == ["sg-1"]


def test_plan_refuses_an_empty_interval_and_sizes_the_shards():
    params = {"epochs": 4, "instance_count": 2, "gpus_per_instance": 1, "samples_per_second": 5000, "storage": "auto"}
    with pytest.raises(ValueError, match="holds no valid records"):
        plan_training_data({"rows": 0, "bytes": 0, "objects": 0}, params, 1)
    plan = plan_training_data({"rows": 70_000, "bytes": 20_000_000, "objects": 7}, params, 1)
    assert plan["shard_count"] == plan["shards"]["shards"] and plan["shard_count"] % 2 == 0
    assert plan["fsx_enabled"] is False and plan["input_mode"] in ("File", "FastFile")
    forced = plan_training_data(
        {"rows": 70_000, "bytes": 20_000_000, "objects": 7}, {**params, "storage": "fsx_lustre"}, 1
    )
    assert forced["fsx_enabled"] is True and forced["fsx_storage_capacity_gib"] >= 1200


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"target_device": "bogus"}, "params.target_device: must be a Neo TargetDevice"),
        ({"quality": {"max_dupes": 0.1}}, "params.quality: unknown threshold 'max_dupes'"),
        ({"quality": "{'min_rows': 0}"}, "params.quality['min_rows']: must be an integer >= 1"),
        ({"quality": {"min_rows": True}}, "params.quality['min_rows']: must be an integer >= 1"),
        ({"instance_type": "ml.bogus.xlarge"}, "params.instance_type: is not a SageMaker TrainingInstanceType"),
    ],
)
def test_a_run_with_bad_params_fails_at_its_first_task(overrides, message):
    from mlscale.specs import SpecError
    from mlscale_example.pipeline.params import check_run_params

    params = {"target_device": "ml_c5", "quality": {"min_rows": 10}, "instance_type": "ml.c5.xlarge"}
    check_run_params(params)
    with pytest.raises(SpecError, match=re.escape(message)):
        check_run_params({**params, **overrides})


def test_the_engine_that_ran_names_the_data_and_the_shards():
    from mlscale_example.pipeline.steps import etl_output, shard_output

    not_needed = {"enabled": False, "skip_reason": "etl_engine=spark"}
    uris = {"shards_uri": "s3://b/s/", "test_uri": "s3://b/t/", "features_uri": "s3://b/f/", "labels_uri": "s3://b/l/"}
    spark = {"job_run_id": "jr_1", "etl_uri": "s3://b/etl/", **uris, "state": "SUCCEEDED"}
    assert etl_output(not_needed, spark) == {"engine": "spark", "data_prefix": "s3://b/etl/", "job": "jr_1"}
    assert shard_output(not_needed, spark) == uris
    athena = {"query_execution_id": "q-1", "data_prefix": "s3://b/etl/"}
    assert etl_output(athena, {"enabled": False})["engine"] == "athena"
    assert shard_output({**uris, "job_name": "shard-1"}, {"enabled": False}) == uris
