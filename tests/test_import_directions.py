"""The three distributions import one way: the example project -> the provider; the emulator -> neither.

The provider meets the emulator only over the AWS API (that is what proves the same DAG runs on AWS); the
emulator knows only AWS's API and finds a project's local setup through an entry point.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = {
    "mlscale": [REPO / "provider" / "src" / "mlscale"],
    "mlscale_emulator": [REPO / "emulator" / "src" / "mlscale_emulator"],
    "mlscale_example": [REPO / "plugins" / "mlscale_example", REPO / "dags"],
}
FORBIDDEN = {
    "mlscale": {"mlscale_emulator", "mlscale_example"},
    "mlscale_emulator": {"mlscale", "mlscale_example"},
    "mlscale_example": {"mlscale_emulator"},
}


def imported_names(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement or importlib.import_module("...") names, with its line."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append((node.lineno, node.module or ""))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.append((node.lineno, str(node.args[0].value)))
    return names


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_imports_go_one_way(package):
    leaks = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for folder in PACKAGES[package]
        for path in sorted(folder.rglob("*.py"))
        for line, name in imported_names(path)
        if name.split(".")[0] in FORBIDDEN[package]
    ]
    assert leaks == []


def test_the_checker_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from mlscale_emulator import control\n    importlib.import_module('mlscale.x')\n")
    assert imported_names(module) == [(2, "mlscale_emulator"), (3, "mlscale.x")]


def test_the_provider_imports_without_the_emulator_or_its_packages():
    """A user on AWS installs the provider alone: every provider module imports with the emulator's packages
    (moto, torch, duckdb, scikit-learn, xgboost) and the other two distributions made unimportable."""
    blocked = ["mlscale_emulator", "mlscale_example", "moto", "torch", "duckdb", "sklearn", "xgboost", "sqlglot"]
    code = f"""
import importlib, importlib.abc, json, pkgutil, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"blocked: {{name}}")
sys.meta_path.insert(0, Block())
import mlscale
failed = {{}}
for info in pkgutil.walk_packages(mlscale.__path__, "mlscale."):
    if ".in_job." in info.name:
        continue  # runs inside jobs, with the job's own packages
    try:
        importlib.import_module(info.name)
    except Exception as error:
        failed[info.name] = repr(error)
print(json.dumps(failed))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {}


def test_the_provider_distribution_depends_on_none_of_the_emulator():
    import tomllib

    provider = tomllib.loads((REPO / "provider" / "pyproject.toml").read_text())["project"]
    requirements = " ".join(provider["dependencies"] + sum(provider["optional-dependencies"].values(), []))
    for package in ("moto", "torch", "duckdb", "scikit-learn", "xgboost", "mlscale-emulator", "pgserver"):
        assert package not in requirements
