"""Every SageMaker request is checked against botocore's model of the API before moto sees it.

moto trusts its input: a body that is not JSON, a missing RoleArn or `InstanceCount: -1` ended in a
500 HTML page or an IndexError. SageMaker answers such requests 400 with a JSON error naming the
member; botocore's own ParamValidator (what a client runs before it sends) gives the same report here.
"""

from __future__ import annotations

import json
from functools import cache

from moto.sagemaker import responses as sm_responses


@cache
def _model():
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker")


def _error(status: int, kind: str, message: str):
    return status, {"status": status, "Content-Type": "application/json", "x-amzn-ErrorType": kind}, json.dumps(
        {"__type": kind, "message": message})  # fmt: skip


def problem(action: str, body: bytes | str | None) -> tuple[str, str] | None:
    """(error code, message) when the request breaks the API's model, else None."""
    from botocore.validate import ParamValidator

    try:
        params = json.loads(body or "{}")
    except ValueError as error:
        return "SerializationException", f"The request body is not JSON: {error}"
    if not isinstance(params, dict):
        return "SerializationException", "The request body must be a JSON object"
    try:
        operation = _model().operation_model(action)
    except Exception:  # noqa: BLE001 - an action botocore does not know: moto answers it as it does
        return None
    report = ParamValidator().validate(params, operation.input_shape)
    if report.has_errors():
        return "ValidationException", report.generate_report()
    return None


def _validated_call_action(self):
    found = problem(self._get_action(), self.body)
    if found:
        return _error(400, *found)
    return _moto_call_action(self)


_moto_call_action = sm_responses.SageMakerResponse.call_action


def install() -> None:
    sm_responses.SageMakerResponse.call_action = _validated_call_action
