"""AWS's request-rate limits on the emulator: token buckets per account, region and operation, answered with
each service's own throttling error, which botocore's retry modes then handle as on AWS."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from mlscale_emulator import limits


def test_a_bucket_holds_its_burst_and_refills_at_its_rate():
    buckets = limits.Buckets()
    assert [buckets.take("k", rate=5, burst=5, now=0.0) for _ in range(6)] == [True] * 5 + [False]
    assert buckets.take("k", rate=5, burst=5, now=0.2) and not buckets.take("k", rate=5, burst=5, now=0.2)
    assert buckets.take("other", rate=5, burst=5, now=0.2)  # another operation or account has its own


def test_rates_by_operation_family_and_service_and_the_setting(monkeypatch):
    rates = limits.configured()
    assert limits.rate_for(rates, "logs", "FilterLogEvents") == (5, 5)
    assert limits.rate_for(rates, "sagemaker", "DescribeTrainingJob") == (20, 40)
    assert limits.rate_for(rates, "sagemaker", "CreateTrainingJob") == (5, 10)
    assert limits.rate_for(rates, "iam", "GetRole") is None  # no published rate, no assumption: unlimited
    monkeypatch.setenv("MLSCALE_EMULATOR_LIMITS", json.dumps({"sagemaker:Describe*": [1, 2]}))
    assert limits.rate_for(limits.configured(), "sagemaker", "DescribeEndpoint") == (1, 2)
    monkeypatch.setenv("MLSCALE_EMULATOR_LIMITS", "off")
    assert limits.configured() is None


@pytest.mark.parametrize(
    ("service", "status", "code", "shape"),
    [
        ("athena", 400, "TooManyRequestsException", b'"__type": "TooManyRequestsException"'),
        ("batch", 429, "TooManyRequestsException", b'"__type": "TooManyRequestsException"'),
        ("s3", 503, "SlowDown", b"<Code>SlowDown</Code>"),
        ("sagemaker", 400, "ThrottlingException", b'"__type": "ThrottlingException"'),
    ],
)
def test_a_throttled_request_gets_the_services_own_error(service, status, code, shape):
    from mlscale_emulator.guard import error_response

    calls = []
    throttle = limits.Throttle(
        lambda environ, start: calls.append(1) or [b"ok"], {f"{service}:*": (1, 1), "s3:read": (1, 1)}, error_response
    )
    environ = {
        "REQUEST_METHOD": "GET" if service == "s3" else "POST",
        "PATH_INFO": "/bucket/key",
        "HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential=AKID/20261207/us-east-1/{service}/aws4_request, "
        "SignedHeaders=host, Signature=x",
        **({} if service == "s3" else {"CONTENT_TYPE": "application/json"}),  # Batch: restJson1
        **({} if service in ("s3", "batch") else {"HTTP_X_AMZ_TARGET": "Service.Operation"}),
    }
    seen = {}

    def start(status_line, headers, exc_info=None):
        seen["status"] = status_line

    assert b"".join(throttle(dict(environ), start)) == b"ok"
    body = b"".join(throttle(dict(environ), start))
    assert seen["status"].startswith(str(status)) and shape in body.replace(b'":"', b'": "') and len(calls) == 1
    executor = {**environ, "HTTP_USER_AGENT": f"Boto3/1 {limits.EXECUTOR_AGENT}"}
    assert b"".join(throttle(executor, start)) == b"ok"  # the emulator's own work is not the account's


@pytest.mark.emulator
def test_the_emulator_throttles_logs_reads_and_botocore_retries_land_them(emulator):
    def client(retries: dict):
        return boto3.client(
            "logs", endpoint_url=emulator.endpoint_url, region_name="eu-west-3", config=Config(retries=retries)
        )

    logs = client({"total_max_attempts": 1})
    logs.create_log_group(logGroupName="/limits/probe")
    throttled = []
    for _ in range(12):  # FilterLogEvents: 5 a second per account and region, as CloudWatch Logs allows
        try:
            logs.filter_log_events(logGroupName="/limits/probe")
        except ClientError as error:
            throttled.append((error.response["Error"]["Code"], error.response["ResponseMetadata"]["HTTPStatusCode"]))
    assert throttled and set(throttled) == {("ThrottlingException", 400)}
    patient = client({"mode": "standard", "max_attempts": 10})
    for _ in range(8):  # botocore's standard mode backs off and lands each call
        patient.filter_log_events(logGroupName="/limits/probe")
