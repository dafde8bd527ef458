"""Every request to a JSON service the emulator runs work for is checked against botocore's model first.

moto trusts its input: a body that is not JSON, a missing RoleArn or `InstanceCount: -1` ended in a
500 HTML page or an IndexError, and an endpoint named `../x` became a directory outside the emulator's
home. AWS answers such requests 400 ValidationException naming the member and the constraint. botocore's
own ParamValidator (what a client runs before it sends) checks types, required members and minimums; the
model's `pattern`, `enum` and `max` traits are checked here too, as the service does: a pattern must match
the whole value (`fullmatch`: `$` would let a trailing newline through). A pattern Python's `re` cannot
compile (Java's surrogate ranges in Glue's NameString) is left to the service's own rules.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

# moto's response class of each service, by botocore's service name
SERVICES = {
    "sagemaker": ("moto.sagemaker.responses", "SageMakerResponse"),
    "athena": ("moto.athena.responses", "AthenaResponse"),
    "glue": ("moto.glue.responses", "GlueResponse"),
    "fsx": ("moto.fsx.responses", "FSxResponse"),
}
MAX_DEPTH = 20


@cache
def _model(service: str):
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


@cache
def _pattern(text: str) -> re.Pattern | None:
    try:
        return re.compile(text)
    except re.error:
        return None


def _error(status: int, kind: str, message: str):
    return (
        status,
        {"status": status, "Content-Type": "application/json", "x-amzn-ErrorType": kind},
        json.dumps({"__type": kind, "message": message}),
    )


def problem(action: str, body: bytes | str | None, service: str = "sagemaker") -> tuple[str, str] | None:
    """(error code, message) when the request breaks the API's model, else None."""
    from botocore.validate import ParamValidator

    try:
        params = json.loads(body or "{}")
    except ValueError as error:
        return "SerializationException", f"The request body is not JSON: {error}"
    if not isinstance(params, dict):
        return "SerializationException", "The request body must be a JSON object"
    try:
        operation = _model(service).operation_model(action)
    except Exception:  # noqa: BLE001 - an action botocore does not know: moto answers it as it does
        return None
    report = ParamValidator().validate(params, operation.input_shape)
    if report.has_errors():
        return "ValidationException", report.generate_report()
    broken = constraint_errors(params, operation.input_shape)
    if broken:
        return (
            "ValidationException",
            f"{len(broken)} validation error{'s' if len(broken) > 1 else ''} detected: " + "; ".join(broken),
        )
    return None


def constraint_errors(value: Any, shape, path: str = "", depth: int = 0) -> list[str]:
    """SageMaker's wording: "Value 'x' at 'a.b' failed to satisfy constraint: Member must ..."."""
    if shape is None or depth > MAX_DEPTH:
        return []
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        found = []
        for name, member in shape.members.items():
            if name in value:
                field = f"{path}.{name[:1].lower()}{name[1:]}" if path else f"{name[:1].lower()}{name[1:]}"
                found += constraint_errors(value[name], member, field, depth + 1)
        return found
    if kind == "list" and isinstance(value, list):
        return [
            e
            for i, item in enumerate(value)
            for e in constraint_errors(item, shape.member, f"{path}.{i + 1}.member", depth + 1)
        ]
    if kind == "map" and isinstance(value, dict):
        found = []
        for key, item in value.items():
            found += constraint_errors(key, shape.key, f"{path}.key", depth + 1)
            found += constraint_errors(item, shape.value, f"{path}.{key}", depth + 1)
        return found
    if kind == "string" and isinstance(value, str):
        return _string_errors(value, shape, path)
    return []


def _string_errors(value: str, shape, path: str) -> list[str]:
    meta, shown = shape.metadata, value if len(value) <= 200 else value[:200] + "..."

    def broken(rule: str) -> str:
        return f"Value '{shown}' at '{path}' failed to satisfy constraint: {rule}"

    if shape.enum and value not in shape.enum:
        return [broken(f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")]
    if "max" in meta and len(value) > meta["max"]:
        return [broken(f"Member must have length less than or equal to {meta['max']}")]
    pattern = _pattern(meta["pattern"]) if "pattern" in meta else None
    if pattern is not None and not pattern.fullmatch(value):
        return [broken(f"Member must satisfy regular expression pattern: {meta['pattern']}")]
    return []


def _validating(service: str, moto_call_action):
    def call_action(self):
        found = problem(self._get_action(), self.body, service)
        if found:
            return _error(400, *found)
        return moto_call_action(self)

    call_action.mlscale_validating = True
    return call_action


def install() -> None:
    import importlib

    for service, (module, name) in SERVICES.items():
        response = getattr(importlib.import_module(module), name)
        if not getattr(response.call_action, "mlscale_validating", False):
            response.call_action = _validating(service, response.call_action)
