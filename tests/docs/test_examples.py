"""The documentation's code: every Python example is included from a file here that these tests import and
whose stage specs they validate, so an example cannot drift from the API."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"
EXAMPLES = sorted((DOCS / "examples").glob("*.py"))
INCLUDE = re.compile(r"```\{literalinclude\} (\S+)\n((?::[^\n]*\n)*)```")


def load_dag(path):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(path))
    assert bag.import_errors == {}
    (dag,) = bag.dags.values()
    return dag


def has_references(value) -> bool:
    """An XComArg or a template in the spec: it is checked when the task renders it, in a run."""
    from airflow.sdk.definitions.xcom_arg import XComArg

    if isinstance(value, XComArg):
        return True
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(has_references(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_references(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return any(has_references(getattr(value, f)) for f in value.__dataclass_fields__)
    return False


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_dag_imports_and_its_specs_validate(path):
    dag = load_dag(path)
    validated = 0
    for task in dag.tasks:
        spec = getattr(task, "spec", None)
        if spec is None or has_references(spec):
            continue
        spec.validate()
        validated += 1
    assert validated >= 1  # each file shows at least one stage whose spec stands alone


def test_no_python_example_is_written_inline_in_the_docs():
    inline = [f"{page.name}" for page in DOCS.glob("*.md") if "```python" in page.read_text()]
    assert inline == []


def test_every_included_example_names_markers_that_exist():
    """Sphinx's -W fails on a missing marker too; this names the page and the marker without a build."""
    for page in DOCS.glob("*.md"):
        for target, options in INCLUDE.findall(page.read_text()):
            source = (page.parent / target).resolve()
            assert source.is_file(), f"{page.name}: {target}"
            text = source.read_text()
            for marker in re.findall(r":(?:start-after|end-before|start-at): (.+)", options):
                assert marker.strip() in text, f"{page.name}: {target} has no {marker!r}"
