"""Writes the generated lists of mlscale/provider_info.py from the code: the modules that define operators,
sensors, triggers and hooks (found by importing them), and `mlscale.links.ALL_LINKS`.

Run by `make provider-info`; tests/test_provider_info.py fails when the file no longer matches. The lists are
kept as data because every Airflow process loads provider info, and importing the whole provider there to find
them would cost it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path

PROVIDER_INFO = Path(__file__).resolve().parent.parent / "src" / "mlscale" / "provider_info.py"
# the formatter leaves the block as this script writes it
START, END = "# --- generated: start ---\n# fmt: off\n", "# fmt: on\n# --- generated: end ---\n"


def defining(package_name: str, base: type) -> list[str]:
    """The modules of the package (the package itself included) that define a subclass of `base`."""
    package = importlib.import_module(package_name)
    names = [package_name] + [i.name for i in pkgutil.walk_packages(package.__path__, package_name + ".")]
    found = []
    for name in names:
        module = importlib.import_module(name)
        if any(
            issubclass(value, base) and value is not base and value.__module__ == name
            for _, value in inspect.getmembers(module, inspect.isclass)
        ):
            found.append(name)
    return sorted(found)


def generated_block() -> str:
    from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator
    from airflow.triggers.base import BaseTrigger

    from mlscale.links import ALL_LINKS

    modules = {
        "operators": defining("mlscale.operators", BaseOperator),
        "sensors": defining("mlscale.sensors", BaseSensorOperator),
        "triggers": defining("mlscale.triggers", BaseTrigger),
        "hooks": defining("mlscale.hooks", BaseHook),
    }
    links = [f"{link.__module__}.{link.__name__}" for link in ALL_LINKS]
    return f"MODULES = {json.dumps(modules, indent=4)}\nEXTRA_LINKS = {json.dumps(links, indent=4)}\n"


def current_block(text: str) -> str:
    return text[text.index(START) + len(START) : text.index(END)]


def main() -> int:
    text = PROVIDER_INFO.read_text()
    block = generated_block()
    if current_block(text) != block:
        PROVIDER_INFO.write_text(text.replace(current_block(text), block))
        print(f"{PROVIDER_INFO}: updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
