"""The emulator refuses what SageMaker refuses, before it writes a file: names, channels, paths, counts."""

from __future__ import annotations

import botocore.config
import pytest
from botocore.exceptions import ClientError

from tests.conftest import training_request, upload_source, wait_for_job

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def raw_sagemaker(emulator):
    """A client that sends what it is given, as a hand-written request or another SDK would."""
    import boto3

    return boto3.client(
        "sagemaker",
        endpoint_url=emulator.endpoint_url,
        region_name="us-east-1",
        config=botocore.config.Config(parameter_validation=False),
    )


def refused(call, **request) -> str:
    with pytest.raises(ClientError) as error:
        call(**request)
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error.value.response["Error"]["Code"] == "ValidationException"
    return error.value.response["Error"]["Message"]


def test_a_job_name_that_is_a_path_is_refused(emulator, clients, raw_sagemaker):
    source = upload_source(clients["s3"], {"train.py": "print(1)"}, "code/rules/sourcedir.tar.gz")
    message = refused(raw_sagemaker.create_training_job, **training_request("../../escaped", source))
    assert "trainingJobName" in message and "regular expression pattern" in message
    assert not (emulator.home.parent / "escaped").exists()


def test_channel_names_and_instance_counts(clients, raw_sagemaker):
    source = upload_source(clients["s3"], {"train.py": "print(1)"}, "code/rules/sourcedir.tar.gz")
    request = training_request("dots-channel", source, channels={"..": "s3://mlscale-test/data/"})
    assert "channelName" in refused(raw_sagemaker.create_training_job, **request)
    request = training_request("minus-one", source)
    request["ResourceConfig"]["InstanceCount"] = -1  # botocore's model: min 0
    assert "ResourceConfig.InstanceCount, value: -1" in refused(raw_sagemaker.create_training_job, **request)
    request["ResourceConfig"]["InstanceCount"] = 0  # 0 only with instance groups, which the emulator does not run
    assert "greater than or equal to 1" in refused(raw_sagemaker.create_training_job, **request)


def test_a_processing_local_path_may_not_leave_the_processing_root(raw_sagemaker):
    request = {
        "ProcessingJobName": "escaping-path",
        "RoleArn": "arn:aws:iam::123456789012:role/r",
        "AppSpecification": {"ImageUri": "image:1"},
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 1}
        },
        "ProcessingInputs": [
            {
                "InputName": "data",
                "S3Input": {
                    "S3Uri": "s3://mlscale-test/data/",
                    "LocalPath": "/opt/ml/processing/../../../tmp/x",
                    "S3DataType": "S3Prefix",
                    "S3InputMode": "File",
                },
            }
        ],
        "StoppingCondition": {"MaxRuntimeInSeconds": 60},
    }
    assert "localPath" in refused(raw_sagemaker.create_processing_job, **request)


def test_an_object_key_that_leaves_its_channel_fails_the_job_and_writes_nothing(emulator, clients):
    clients["s3"].put_object(Bucket="mlscale-test", Key="escape/chan/../../../../../../tmp/mlscale-escape", Body=b"x")
    source = upload_source(clients["s3"], {"train.py": "print(1)"}, "code/rules/sourcedir.tar.gz")
    clients["sagemaker"].create_training_job(
        **training_request("key-escape", source, channels={"train": "s3://mlscale-test/escape/chan/"})
    )
    job = wait_for_job(clients["sagemaker"], "key-escape")
    assert job["TrainingJobStatus"] == "Failed" and "leaves its channel directory" in job["FailureReason"]
    import pathlib

    assert not pathlib.Path("/tmp/mlscale-escape").exists()


def test_malformed_requests_get_400_json_naming_the_member(emulator):
    import json
    import urllib.request

    def post(body: bytes, target: str = "SageMaker.CreateTrainingJob"):
        request = urllib.request.Request(
            emulator.endpoint_url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/x-amz-json-1.1",
                "X-Amz-Target": target,
                "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261203/us-east-1/sagemaker/aws4_request, "
                "SignedHeaders=host, Signature=x",
            },
        )
        try:
            urllib.request.urlopen(request)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
        raise AssertionError("accepted")

    status, body = post(b"{not json")
    assert status == 400 and body["__type"] == "SerializationException"
    status, body = post(
        json.dumps(
            {
                "TrainingJobName": "no-role",
                "AlgorithmSpecification": {"TrainingImage": "i", "TrainingInputMode": "File"},
                "OutputDataConfig": {"S3OutputPath": "s3://b/o"},
                "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 1},
                "StoppingCondition": {"MaxRuntimeInSeconds": 60},
            }
        ).encode()
    )
    assert status == 400 and body["__type"] == "ValidationException" and "RoleArn" in body["message"]


def test_a_metric_regex_re2_cannot_run_is_refused_at_the_api(clients, raw_sagemaker):
    source = upload_source(clients["s3"], {"train.py": "print(1)"}, "code/rules/sourcedir.tar.gz")
    request = training_request("lookaround-metric", source, metrics={"loss": r"(?=loss)loss=([0-9.]+)"})
    assert "algorithmSpecification.metricDefinitions.1.member.regex" in refused(
        raw_sagemaker.create_training_job, **request
    )


def test_a_backtracking_metric_regex_does_not_stall_the_server(clients):
    """One log line against `(a+)+$` froze the server 12.7 s (doubling per character) under Python's re."""
    import time

    script = "print('a' * 40 + '!', flush=True)\nprint('loss=0.5', flush=True)\n"
    source = upload_source(clients["s3"], {"train.py": script}, "code/rules/evil-regex.tar.gz")
    clients["sagemaker"].create_training_job(
        **training_request("evil-regex", source, metrics={"evil": r"(a+)+$", "loss": r"loss=([0-9.]+)"})
    )
    started = time.monotonic()
    job = wait_for_job(clients["sagemaker"], "evil-regex", timeout=60)
    assert job["TrainingJobStatus"] == "Completed" and time.monotonic() - started < 30
    assert {m["MetricName"]: m["Value"] for m in job.get("FinalMetricDataList", [])}.get("loss") == 0.5


def test_instances_beyond_the_account_quota_are_refused_as_aws_refuses_them(clients, monkeypatch):
    """SageMaker's "<type> for training job usage" quota, counted over the running jobs, before anything starts."""
    source = upload_source(clients["s3"], {"train.py": "import time; time.sleep(60)"}, "code/rules/sleeps.tar.gz")
    big = training_request("forty-p4d", source, instance_count=40)
    big["ResourceConfig"]["InstanceType"] = "ml.p4d.24xlarge"
    with pytest.raises(ClientError) as error:
        clients["sagemaker"].create_training_job(**big)
    assert error.value.response["Error"]["Code"] == "ResourceLimitExceeded"
    assert error.value.response["Error"]["Message"].startswith(
        "The account-level service limit 'ml.p4d.24xlarge for training job usage' is 20 Instances, with current "
        "utilization of 0 Instances and a request delta of 40 Instances."
    )
    names = [
        j["TrainingJobName"] for j in clients["sagemaker"].list_training_jobs(MaxResults=100)["TrainingJobSummaries"]
    ]
    assert "forty-p4d" not in names

    first = training_request("holds-quota", source, instance_count=2)
    first["ResourceConfig"]["InstanceType"] = "ml.c5.4xlarge"
    clients["sagemaker"].create_training_job(**first)
    try:
        second = training_request("over-quota", source, instance_count=19)
        second["ResourceConfig"]["InstanceType"] = "ml.c5.4xlarge"
        with pytest.raises(ClientError, match="current utilization of 2 Instances and a request delta of 19"):
            clients["sagemaker"].create_training_job(**second)
    finally:
        clients["sagemaker"].stop_training_job(TrainingJobName="holds-quota")
