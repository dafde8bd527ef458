"""Every operation of the services the stages and the SDKs call is answered in AWS's shape, never as HTML.

Each operation is sent once with its required members filled with placeholders (so most are refused, as AWS
would refuse them: that is the point), through botocore with its own parameter validation off, and the raw
answer is read before botocore parses it. An operation the emulator lacks answers 501 NotImplemented naming
it; a moto bug answers 500 InternalFailure.
"""

from __future__ import annotations

import datetime
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.emulator

SERVICES = (
    "sagemaker",
    "sagemaker-runtime",
    "s3",
    "athena",
    "glue",
    "fsx",
    "logs",
    "batch",
    "greengrassv2",
    "iot",
    "events",
    "cloudwatch",
    "application-autoscaling",
    "cloudformation",
    "iam",
    "sts",
)
REGION = "ap-southeast-2"  # placeholders land away from the region the other tests use
PLACEHOLDER = "mlscale-probe"


def placeholder(shape, depth: int = 0):
    """The smallest value of a shape that botocore can serialize (its patterns and ranges not honoured)."""
    kind = shape.type_name
    if kind == "structure":
        if depth > 6:
            return {}
        return {name: placeholder(shape.members[name], depth + 1) for name in shape.required_members}
    if kind == "list":
        return [placeholder(shape.member, depth + 1)] if shape.metadata.get("min", 0) else []
    if kind == "map":
        return {}
    if kind == "string":
        if shape.enum:
            return shape.enum[0]
        low, high = shape.metadata.get("min", 0), shape.metadata.get("max", 64)
        return (PLACEHOLDER * 8)[: max(low, min(len(PLACEHOLDER), high))]
    if kind in ("integer", "long"):
        return max(1, shape.metadata.get("min", 1))
    if kind in ("float", "double"):
        return 1.0
    if kind == "boolean":
        return False
    if kind == "timestamp":
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    return b"x"  # blob


def answers(emulator, service: str) -> dict[str, tuple[int, str, bytes]]:
    """Operation -> (HTTP status, Content-Type, body) of its raw answer."""
    import boto3
    from botocore.config import Config

    client = boto3.client(
        service,
        endpoint_url=emulator.endpoint_url,
        region_name=REGION,
        config=Config(parameter_validation=False, retries={"mode": "standard", "max_attempts": 1}, read_timeout=60),
    )
    seen: dict[str, tuple[int, str, bytes]] = {}

    def keep(operation_model, response_dict, **_):
        body = response_dict["body"]
        raw = body if isinstance(body, bytes) else b"(a stream)"
        seen[operation_model.name] = (
            response_dict["status_code"],
            response_dict["headers"].get("Content-Type", ""),
            raw[:300],
        )

    client.meta.events.register("before-parse", keep)
    model = client.meta.service_model

    def send(name: str) -> None:
        operation = model.operation_model(name)
        params = placeholder(operation.input_shape) if operation.input_shape else {}
        try:
            getattr(client, _method(client, name))(**params)
        except Exception:  # noqa: BLE001 - refusals are expected; the raw answer is what is checked
            pass

    with ThreadPoolExecutor(4) as pool:  # the server's threads answer while the client builds the next
        list(pool.map(send, model.operation_names))
    return seen


def _method(client, operation: str) -> str:
    return {api: method for method, api in client.meta.method_to_api_mapping.items()}[operation]


def html(content_type: str, body: bytes) -> bool:
    return "html" in content_type.lower() or body.lstrip()[:15].lower().startswith((b"<!doctype", b"<html"))


@pytest.mark.parametrize("service", SERVICES)
def test_no_operation_answers_html(emulator, service):
    seen = answers(emulator, service)
    assert seen, f"no {service} operation reached the emulator"
    pages = {name: (status, body[:120]) for name, (status, kind, body) in seen.items() if html(kind, body)}
    assert not pages, pages
    unshaped = {name: status for name, (status, kind, body) in seen.items() if status >= 500 and not body.strip()}
    assert not unshaped, unshaped
    lacking = {name: body for name, (status, _, body) in seen.items() if status == 501}
    unnamed = {
        name: body
        for name, body in lacking.items()
        if b"NotImplemented" not in body or (name.encode() not in body and b" /" not in body)
    }  # a REST operation is named by its path
    assert not unnamed, unnamed


def test_an_operation_the_emulator_lacks_is_not_implemented_by_name(emulator):
    """What botocore makes of it: the error code and a message naming the operation (not a parse error)."""
    import boto3
    from botocore.exceptions import ClientError

    iam = boto3.client("iam", endpoint_url=emulator.endpoint_url, region_name=REGION)
    with pytest.raises(ClientError) as refused:
        iam.simulate_custom_policy(PolicyInputList=[json.dumps(ALLOW_ALL)], ActionNames=["s3:GetObject"])
    error = refused.value.response["Error"]
    assert error["Code"] == "NotImplemented" and "SimulateCustomPolicy" in error["Message"]
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501


ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
