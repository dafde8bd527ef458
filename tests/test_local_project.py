"""`mlscale airflow` and `mlscale demo` find the project they run through an entry point, never by import."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from mlscale_emulator import local_project


def entry(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=local_project.GROUP)


def test_the_installed_example_project_is_found_and_has_what_the_stack_calls():
    project = local_project.load()
    for method in ("prepare_airflow", "provision", "demo_conf", "demo", "summary"):
        assert callable(getattr(project, method)), method


@pytest.mark.parametrize(
    ("installed", "wanted", "error"),
    [
        ([], None, "0 projects provide the 'mlscale.local_project' entry point (none)"),
        (["a", "b"], None, "2 projects provide the 'mlscale.local_project' entry point (a, b): install one"),
        (["a"], "b", "MLSCALE_PROJECT='b' is not an installed project (a)"),
    ],
)
def test_no_project_or_an_ambiguous_one_is_named_in_one_line(monkeypatch, installed, wanted, error):
    points = [entry(name, "json:loads") for name in installed]
    monkeypatch.setattr(local_project, "entry_points", lambda group: points)
    if wanted:
        monkeypatch.setenv("MLSCALE_PROJECT", wanted)
    else:
        monkeypatch.delenv("MLSCALE_PROJECT", raising=False)
    with pytest.raises(RuntimeError, match=error.replace("(", r"\(").replace(")", r"\)")):
        local_project.load()


def test_mlscale_project_picks_one_of_several(monkeypatch):
    import json

    points = [entry("a", "json:dumps"), entry("b", "json:loads")]
    monkeypatch.setattr(local_project, "entry_points", lambda group: points)
    monkeypatch.setenv("MLSCALE_PROJECT", "b")
    assert local_project.load() is json.loads
