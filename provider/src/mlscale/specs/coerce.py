"""Templated spec fields render to strings in an ordinary DAG; convert them to the types the spec declares.

Airflow renders `"{{ params.instance_count }}"` to the string "2" unless the DAG sets
`render_template_as_native_obj=True`. A spec should not depend on that flag, so `validate()` first
converts each string field to its declared type (int, float, bool, dict, list, or None for an optional
field), naming the field when a string cannot be one.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import types
import typing
from functools import cache
from typing import Any

from mlscale.specs.errors import SpecError

INTEGER = re.compile(r"^[+-]?\d+\Z")
# mlscale's one boolean vocabulary (specs, templates, settings); it takes Airflow's own ("t", "f") too
TRUE, FALSE = ("true", "t", "yes", "1", "on"), ("false", "f", "no", "0", "off")
NONE = ("", "none", "null")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def coerce_fields(spec: Any) -> None:
    """Convert every string field of the dataclass `spec` to its declared type, in place."""
    hints = _hints(type(spec))
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if isinstance(value, str):
            setattr(spec, field.name, convert(value, hints.get(field.name, Any), field.name))


def convert(value: str, target: Any, field: str) -> Any:
    origin, args = typing.get_origin(target), typing.get_args(target)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and value.strip().lower() in NONE:
            return None
        if str in args:
            return value
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return convert(value, option, field)
            except SpecError as error:
                errors.append(error.rule)
        raise SpecError(field, " or ".join(errors), value)
    if target is bool:
        lowered = value.strip().lower()
        if lowered in TRUE + FALSE:
            return lowered in TRUE
        raise SpecError(field, "must be true or false", value)
    if target is int:
        if INTEGER.match(value.strip()):
            return int(value)
        raise SpecError(field, "must be an integer", value)
    if target is float:
        try:
            number = float(value)
        except ValueError:
            raise SpecError(field, "must be a number", value) from None
        if number != number or number in (float("inf"), float("-inf")):
            raise SpecError(field, "must be a finite number", value)
        return number
    container = origin or target
    if container in (dict, list, tuple):
        parsed = _literal(value)
        if not isinstance(parsed, container if container is not tuple else (list, tuple)):
            raise SpecError(
                field, f"must be a {container.__name__} (a rendered template gave a string that is not one)", value
            )
        return parsed
    return value  # str, Any, or a type a template cannot produce


def _literal(value: str) -> Any:
    """JSON, or the Python repr Jinja gives for a dict or list (`{'a': 1}`)."""
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value
