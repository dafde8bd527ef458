"""Provider metadata for Airflow's ProvidersManager (the `apache_airflow_provider` entry point).

Generated from the code, never kept by hand: the modules listed are those that define an operator, sensor,
trigger or hook class (read from the source with `ast`, since every Airflow process loads provider info and
importing the operators would cost it seconds), the extra links are `mlscale.links.ALL_LINKS`, the config
section is `mlscale.settings.OPTIONS` (the provider's own options; a project's are its own section).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from mlscale import __version__
from mlscale.settings import config_schema

PACKAGE = Path(__file__).resolve().parent
# Airflow's provider.yaml sections, and the suffix of the classes that put a module in them
KINDS = {"operators": "Operator", "sensors": "Sensor", "triggers": "Trigger", "hooks": "Hook"}


def _classes(path: Path) -> list[ast.ClassDef]:
    return [node for node in ast.parse(path.read_text()).body if isinstance(node, ast.ClassDef)]


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        base = base.value if isinstance(base, ast.Subscript) else base  # AwsBaseSensor[AwsBaseHook]
        names.append(base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", ""))
    return names


@cache
def modules_defining(kind: str) -> list[str]:
    """The modules of mlscale.<kind> that define a class deriving from a `...<Suffix>` class."""
    folder, suffix = PACKAGE / kind, KINDS[kind]
    found = []
    for path in sorted(folder.rglob("*.py")):
        if any(name.endswith(suffix) for node in _classes(path) for name in _base_names(node)):
            parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@cache
def extra_links() -> list[str]:
    """`mlscale.links.ALL_LINKS`, as class paths."""
    for node in ast.parse((PACKAGE / "links.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ALL_LINKS" for t in node.targets):
            return [f"mlscale.links.{element.id}" for element in node.value.elts]
    raise LookupError("mlscale.links defines no ALL_LINKS")


def get_provider_info() -> dict:
    def section(kind: str) -> list[dict]:
        return [{"integration-name": "mlscale", "python-modules": modules_defining(kind)}]

    return {
        "package-name": "mlscale",
        "name": "mlscale",
        "description": "End-to-end ML pipelines on AWS (SageMaker, FSx, Neo, Greengrass) with a local emulator.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "mlscale",
                "external-doc-url": "https://docs.aws.amazon.com/sagemaker/",
                "tags": ["aws"],
            }
        ],
        **{kind: section(kind) for kind in KINDS},
        "config": config_schema(),
        "extra-links": extra_links(),
    }
