"""The waits of one triggerer share one hook, and so one boto3 client, per connection and service."""

from __future__ import annotations

import pytest

from mlscale.hooks import watch
from mlscale.hooks.resources import KINDS


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(watch, "_shared", {})


def test_waits_on_one_connection_share_a_client_and_other_settings_get_their_own(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_A", '{"conn_type": "aws", "extra": {"region_name": "us-east-1"}}')
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_B", '{"conn_type": "aws", "extra": {"region_name": "us-east-1"}}')
    training, endpoint, fsx = KINDS["training"], KINDS["endpoint"], KINDS["fsx_file_system"]
    first = watch.shared_hook(training, "watch_a")
    assert watch.shared_hook(endpoint, "watch_a") is first  # one SageMaker client for every SageMaker kind
    assert watch.shared_hook(training, "watch_a").conn is first.conn
    assert watch.shared_hook(training, "watch_b") is not first
    assert watch.shared_hook(training, "watch_a", region_name="eu-west-1") is not first
    assert watch.shared_hook(training, "watch_a", botocore_config={"retries": {"mode": "standard"}}) is not first
    assert watch.shared_hook(fsx, "watch_a").conn.meta.service_model.service_name == "fsx"


def test_a_shared_hook_is_made_again_after_a_while_so_an_edited_connection_is_read(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_WATCH_A", '{"conn_type": "aws", "extra": {"region_name": "us-east-1"}}')
    first = watch.shared_hook(KINDS["training"], "watch_a")
    monkeypatch.setattr(watch, "SHARED_HOOK_SECONDS", -1.0)
    assert watch.shared_hook(KINDS["training"], "watch_a") is not first
