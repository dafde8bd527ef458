"""The two lookups moto's server repeats per request are remembered, and a later patch is still seen."""

import pytest

from mlscale_emulator import dispatch, warm_up


def test_a_responses_class_patched_after_its_first_request_gets_its_new_action():
    from moto.core import responses

    dispatch.install()

    class Actions:
        def describe_thing(self):
            pass

    assert responses.method_names_from_class(Actions) == ["describe_thing"]
    Actions.create_thing = lambda self: None  # what the emulator does when moto first loads a service
    assert responses.method_names_from_class(Actions) == ["create_thing", "describe_thing"]


def test_a_host_is_routed_to_the_same_backend_twice():
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch.install()
    app = DomainDispatcherApplication(create_app=None)
    for _ in range(2):
        assert app.get_backend_for_host("api.sagemaker.us-east-1.amazonaws.com") == "sagemaker"
        assert app.get_backend_for_host("s3.us-east-1.amazonaws.com") == "s3"
        assert app.get_backend_for_host("moto_api") == "moto_api"


@pytest.mark.emulator
def test_the_warm_up_creates_nothing(emulator, clients, monkeypatch):
    import boto3

    from mlscale_emulator import settings

    monkeypatch.setattr(settings, "_current", emulator)  # as in the server's process
    region = "ap-northeast-3"  # a region of its own: the session's other clients (the SDKs') work meanwhile
    s3, logs, sagemaker = (
        boto3.client(service, endpoint_url=emulator.endpoint_url, region_name=region)
        for service in ("s3", "logs", "sagemaker")
    )
    before = s3.list_buckets(BucketRegion=region)["Buckets"]
    assert warm_up.warm_up(region) is True
    assert s3.list_buckets(BucketRegion=region)["Buckets"] == before
    assert logs.describe_log_groups()["logGroups"] == []
    assert sagemaker.list_training_jobs()["TrainingJobSummaries"] == []
