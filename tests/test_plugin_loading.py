"""Airflow's own loaders find mlscale through its entry points, cheaply and without shadowing modules."""

import json
import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import json, sys, time
started = time.perf_counter()
from airflow import plugins_manager
plugins, errors = plugins_manager._get_plugins()
links_at_load = "mlscale.links" in sys.modules
links = sorted(type(link).__name__ for link in plugins_manager.get_operator_extra_links()
               if type(link).__module__ == "mlscale.links")
from airflow.providers_manager import ProvidersManager
providers = ProvidersManager().providers
print(json.dumps({
    "plugins": [p.name for p in plugins],
    "errors": errors,
    "provider": "mlscale" in providers,
    "links_at_load": links_at_load,
    "links": links,
    "shadowed": sorted(
        m for m in ("base", "plugin", "training", "naming", "cli", "demo", "settings") if m in sys.modules
    ),
    "heavy": sorted(m for m in ("torch", "duckdb", "pandas", "sagemaker", "moto", "sklearn", "mlscale.ui.app")
                    if m in sys.modules),
}))
"""


def run_probe(env_extra: dict) -> dict:
    env = {
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "PATH": "/usr/bin:/bin",
        **env_extra,
    }
    import os

    env["AIRFLOW_HOME"] = os.environ["AIRFLOW_HOME"]
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_plugin_loads_once_through_its_entry_point_with_no_errors():
    result = run_probe({})
    assert result["plugins"].count("mlscale") == 1
    assert result["errors"] == {}
    assert result["provider"] is True
    # plugins/.airflowignore keeps the loader from importing package files as top-level modules
    assert result["shadowed"] == []
    assert result["heavy"] == []
    # the extra links are made when Airflow first asks for them, not in every process that loads plugins
    assert result["links_at_load"] is False
    assert "TrainingJobLink" in result["links"] and "GreengrassDeploymentLink" in result["links"]


def test_airflowignore_names_the_package():
    assert "mlscale_example" in (REPO / "plugins" / ".airflowignore").read_text().split()


def test_dag_file_imports_nothing_heavy():
    code = (
        "import runpy, sys, json; runpy.run_path(sys.argv[1]); "
        "heavy = ('torch','duckdb','pandas','sagemaker','moto','sklearn')\n"
        "print(json.dumps(sorted(m for m in heavy if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "dags" / "mlscale_pipeline.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []
