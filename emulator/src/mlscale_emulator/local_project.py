"""The Airflow project `mlscale airflow` and `mlscale demo` run, found through the `mlscale.local_project` entry
point (Python packaging's entry points: the emulator imports no project by name).

The entry point names an object with:
- `airflow_environment() -> dict`: what `mlscale airflow`'s components run with (the project's settings for
  the emulator, whose jobs take seconds);
- `prepare_airflow()`: after Airflow's database is migrated (pools, variables);
- `provision(clients) -> str`: the project's AWS resources on the emulator before Airflow starts (a line to print);
- `demo_conf(text) -> dict`: the demo's params from its JSON argument (ValueError in one line);
- `demo(repo, run_dag, conf, clients) -> dict`: the demo's DAG runs, through `run_dag(dag_file, dag_id, conf)`;
- `summary(result, wall_seconds) -> str`: what the demo prints at the end.
`clients(service)` gives a boto3 client of the emulator.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points

GROUP = "mlscale.local_project"


def load():
    """The installed project (MLSCALE_PROJECT names one when several are installed)."""
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    wanted = os.environ.get("MLSCALE_PROJECT")
    if wanted:
        if wanted not in found:
            raise RuntimeError(f"MLSCALE_PROJECT={wanted!r} is not an installed project ({', '.join(found) or 'none'})")
        return found[wanted].load()
    if len(found) != 1:
        raise RuntimeError(
            f"{len(found)} projects provide the {GROUP!r} entry point ({', '.join(found) or 'none'}): "
            "install one (`pip install -e .` in its folder), or set MLSCALE_PROJECT to one"
        )
    return next(iter(found.values())).load()
