"""The provider info is generated from the code: it lists what the code defines, and Airflow accepts it."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import airflow
import jsonschema

from mlscale.provider_info import get_provider_info


def defined_in(package, base) -> set[str]:
    """The modules of `package` that define a subclass of `base`, found by importing them."""
    import importlib
    import pkgutil

    found = set()
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, base) and value is not base and value.__module__ == info.name:
                found.add(info.name)
    return found


def test_every_module_that_defines_an_operator_sensor_trigger_or_hook_is_listed():
    from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator
    from airflow.triggers.base import BaseTrigger

    import mlscale.hooks
    import mlscale.operators
    import mlscale.triggers

    info = get_provider_info()
    listed = {kind: set(info[kind][0]["python-modules"]) for kind in ("operators", "sensors", "triggers", "hooks")}
    assert listed["operators"] == defined_in(mlscale.operators, BaseOperator)
    assert listed["triggers"] == defined_in(mlscale.triggers, BaseTrigger)
    assert listed["hooks"] == defined_in(mlscale.hooks, BaseHook)
    import mlscale.sensors

    assert listed["sensors"] == {"mlscale.sensors"}
    assert any(issubclass(v, BaseSensorOperator) for _, v in inspect.getmembers(mlscale.sensors, inspect.isclass))


def test_the_extra_links_are_the_links_module_s_own_list():
    from mlscale.links import ALL_LINKS

    assert get_provider_info()["extra-links"] == [f"{link.__module__}.{link.__name__}" for link in ALL_LINKS]


def test_airflow_s_schema_accepts_it():
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)
