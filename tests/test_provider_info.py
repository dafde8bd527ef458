"""The provider info is generated from the code: it lists what the code defines, and Airflow accepts it."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import airflow
import jsonschema

from mlscale.provider_info import get_provider_info
from tests.conftest import REPO


def generator():
    path = REPO / "provider" / "scripts" / "generate_provider_info.py"
    spec = importlib.util.spec_from_file_location("generate_provider_info", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_module_that_defines_an_operator_sensor_trigger_or_hook_is_listed():
    script = generator()
    listed = script.current_block(script.PROVIDER_INFO.read_text())
    assert listed == script.generated_block(), "provider_info.py no longer matches the code: run make provider-info"


def test_the_extra_links_are_the_links_module_s_own_list():
    from mlscale.links import ALL_LINKS

    assert get_provider_info()["extra-links"] == [f"{link.__module__}.{link.__name__}" for link in ALL_LINKS]


def test_airflow_s_schema_accepts_it():
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)


def test_it_costs_an_airflow_process_next_to_nothing():
    """Every Airflow process reads it while loading its configuration."""
    started = time.perf_counter()
    get_provider_info()
    assert time.perf_counter() - started < 0.005
