"""Hooks shared in a process: one per connection and environment, a new one when either changes."""

from airflow.providers.amazon.aws.hooks.s3 import S3Hook
from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

from mlscale.aws.clients import shared_hook

CONN = "aws://key:secret@/?region_name=us-east-1&endpoint_url=http%3A%2F%2F127.0.0.1%3A{port}"


def test_the_same_connection_shares_a_hook_and_its_client(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_MLSCALE_SHARED", CONN.format(port=5001))
    first = shared_hook(S3Hook, aws_conn_id="mlscale_shared", region_name="us-east-1")
    assert shared_hook(S3Hook, aws_conn_id="mlscale_shared", region_name="us-east-1") is first
    assert first.get_conn() is first.get_conn()
    assert shared_hook(SageMakerHook, aws_conn_id="mlscale_shared", region_name="us-east-1") is not first
    assert shared_hook(S3Hook, aws_conn_id="mlscale_shared", region_name="eu-west-1") is not first


def test_an_edited_connection_or_another_aws_environment_gets_a_new_hook(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_MLSCALE_SHARED", CONN.format(port=5001))
    first = shared_hook(S3Hook, aws_conn_id="mlscale_shared")
    monkeypatch.setenv("AIRFLOW_CONN_MLSCALE_SHARED", CONN.format(port=5002))  # the endpoint moved
    moved = shared_hook(S3Hook, aws_conn_id="mlscale_shared")
    assert moved is not first and moved.get_conn().meta.endpoint_url == "http://127.0.0.1:5002"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "another")
    assert shared_hook(S3Hook, aws_conn_id="mlscale_shared") is not moved


def test_a_missing_connection_falls_back_to_boto3s_own_configuration():
    hook = shared_hook(S3Hook, aws_conn_id="mlscale_no_such_connection")
    assert shared_hook(S3Hook, aws_conn_id="mlscale_no_such_connection") is hook
