"""No web page reaches the emulator, and what it cannot parse gets the service's own error shape."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

pytestmark = pytest.mark.emulator

SIGNED = (
    "AWS4-HMAC-SHA256 Credential=testing/20261207/us-east-1/{service}/aws4_request, SignedHeaders=host, Signature=x"
)


def send(url: str, *, method: str = "POST", body: bytes | None = b"", headers: dict | None = None):
    """(status, headers, body) of a raw HTTP request, as a browser or a hand-written client sends it."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def target(service: str, operation: str) -> dict:
    return {
        "Content-Type": "application/x-amz-json-1.1",
        "X-Amz-Target": operation,
        "Authorization": SIGNED.format(service=service),
    }


def no_cors(headers: dict) -> bool:
    return not any(k.lower().startswith("access-control-") for k in headers)


def test_a_preflight_from_any_web_page_is_refused_without_cors_headers(emulator):
    status, headers, _ = send(
        emulator.endpoint_url + "/",
        method="OPTIONS",
        body=None,
        headers={
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,x-amz-target",
        },
    )
    assert status == 403 and no_cors(headers)


def test_a_page_script_cannot_create_a_job(emulator, clients):
    request = {"TrainingJobName": "from-a-web-page"}
    status, headers, body = send(
        emulator.endpoint_url + "/",
        body=json.dumps(request).encode(),
        headers={**target("sagemaker", "SageMaker.CreateTrainingJob"), "Origin": "http://evil.example"},
    )
    assert status == 403 and no_cors(headers) and b"browser origin" in body
    names = [j["TrainingJobName"] for j in clients["sagemaker"].list_training_jobs()["TrainingJobSummaries"]]
    assert "from-a-web-page" not in names


def test_a_cross_site_get_without_origin_is_refused(emulator, clients):
    """An <img src> of another site's page sends no Origin; the browser still says it is cross-site."""
    clients["s3"].put_object(Bucket="mlscale-test", Key="front-door/object", Body=b"x")
    url = f"{emulator.endpoint_url}/mlscale-test/front-door/object"
    status, _, body = send(
        url, method="GET", body=None, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
    )
    assert status == 403 and b"on another site's behalf" in body
    _, _, body = send(url, method="GET", body=None)  # no fetch metadata: moto decides (anonymous: its own 403)
    assert b"on another site's behalf" not in body


def test_dns_rebinding_is_refused_by_host(emulator):
    """A page whose name now resolves to 127.0.0.1 still sends its own name as Host."""
    status, headers, body = send(
        emulator.endpoint_url + "/",
        body=b"{}",
        headers={**target("sagemaker", "SageMaker.ListTrainingJobs"), "Host": f"rebound.evil.example:{emulator.port}"},
    )
    assert status == 403 and b"not this emulator's address" in body and no_cors(headers)
    status, _, _ = send(
        emulator.endpoint_url + "/",
        body=b"{}",
        headers={**target("sagemaker", "SageMaker.ListTrainingJobs"), "Host": f"localhost:{emulator.port}"},
    )
    assert status == 200


def test_an_allowed_origin_is_answered_with_cors():
    """MLSCALE_EMULATOR_ALLOWED_ORIGINS: a tool that needs a browser may be let in, by exact origin."""
    from mlscale_emulator.guard import Guard

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b"{}"]

    guard = Guard(app, port=5055, origins=["http://localhost:3000"])
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen.update(status=status, headers=dict(headers))

    environ = {"REQUEST_METHOD": "OPTIONS", "HTTP_HOST": "127.0.0.1:5055", "HTTP_ORIGIN": "http://localhost:3000"}
    guard(environ, start_response)
    assert (
        seen["status"].startswith("200") and seen["headers"]["Access-Control-Allow-Origin"] == "http://localhost:3000"
    )
    guard({**environ, "HTTP_ORIGIN": "http://localhost:3001"}, start_response)
    assert seen["status"].startswith("403")


@pytest.mark.parametrize(
    ("service", "operation", "body"),
    [
        ("sagemaker", "SageMaker.CreateTrainingJob", b"[1, 2]"),
        ("sagemaker", "SageMaker.CreateTrainingJob", b"TrainingJobName=x&RoleArn=y"),
        ("athena", "AmazonAthena.StartQueryExecution", b"{bad"),
        ("glue", "AWSGlue.GetTable", b'"a string"'),
        ("fsx", "AWSSimbaAPIService_v20180301.DescribeFileSystems", b"not json"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_serialization_exception(emulator, service, operation, body):
    status, headers, answer = send(emulator.endpoint_url + "/", body=body, headers=target(service, operation))
    assert status == 400 and "json" in headers.get("Content-Type", "")
    assert json.loads(answer)["__type"] == "SerializationException"


def test_a_rest_json_service_gets_json_errors_too(emulator):
    status, _, answer = send(
        emulator.endpoint_url + "/greengrass/v2/createComponentVersion",
        body=b"{oops",
        headers={"Content-Type": "application/json", "Authorization": SIGNED.format(service="greengrass")},
    )
    assert status == 400 and json.loads(answer)["__type"] == "SerializationException"


def test_an_internal_failure_is_aws_shaped_not_html():
    """moto's own bug (an exception, or its HTML 500 page) reaches the client as the protocol's error."""
    from mlscale_emulator.guard import Guard

    def broken(environ, start_response):
        raise KeyError("moto bug")

    def html_500(environ, start_response):
        start_response("500 INTERNAL SERVER ERROR", [("Content-Type", "text/html")])
        return [b"<html>Traceback</html>"]

    for app in (broken, html_500):
        seen, guard = {}, Guard(app, port=5055)

        def start_response(status, headers, exc_info=None):
            seen.update(status=status, headers=dict(headers))  # noqa: B023 (called within this turn of the loop)

        json_body = b"".join(
            guard(
                {
                    "REQUEST_METHOD": "POST",
                    "HTTP_HOST": "127.0.0.1:5055",
                    "HTTP_X_AMZ_TARGET": "SageMaker.ListModels",
                    "wsgi.input": None,
                },
                start_response,
            )
        )
        assert seen["status"].startswith("500") and json.loads(json_body)["__type"] == "InternalFailure"
        xml_body = b"".join(guard({"REQUEST_METHOD": "GET", "HTTP_HOST": "127.0.0.1:5055"}, start_response))
        assert b"<Code>InternalError</Code>" in xml_body and seen["headers"]["Content-Type"] == "application/xml"


def test_the_console_page_stays_html_while_api_answers_say_json(emulator, clients):
    """Plain-string answers to signed API calls are typed JSON; the browser console's pages remain HTML."""
    from tests.conftest import training_request, upload_source

    source = upload_source(clients["s3"], {"train.py": "print('console')"}, "code/console-type/sourcedir.tar.gz")
    clients["sagemaker"].create_training_job(**training_request("console-type", source))
    status, headers, body = send(
        f"{emulator.endpoint_url}/moto-api/mlscale/training-jobs/console-type", method="GET", body=None
    )
    assert status == 200 and headers["Content-Type"].startswith("text/html") and b"<h1>" in body
    status, headers, _ = send(
        emulator.endpoint_url + "/", body=b"{}", headers=target("sagemaker", "SageMaker.ListTrainingJobs")
    )
    assert status == 200 and headers["Content-Type"] == "application/x-amz-json-1.1"
