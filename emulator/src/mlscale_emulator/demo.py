"""`mlscale demo`: the example DAG, end to end, through Airflow, against the local emulator."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from mlscale_emulator.local_airflow import airflow_environment, emulator_settings


def run_dag(dag_file: Path, dag_id: str, conf: dict | None = None) -> dict:
    """Run one DAG run with dag.test() (Airflow must be configured by the environment); return its XComs."""
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    bag = DagBag(dag_folder=str(dag_file))
    if bag.import_errors:
        raise RuntimeError(f"DAG import errors: {bag.import_errors}")
    dag = bag.get_dag(dag_id)
    run = dag.test(run_conf=conf or {})
    run_seconds = (run.end_date - run.start_date).total_seconds() if run.end_date and run.start_date else None
    with create_session() as session:
        rows = (
            session.query(XComModel)
            .filter(XComModel.run_id == run.run_id, XComModel.dag_id == dag_id, XComModel.key == "return_value")
            .all()
        )
        xcoms = {row.task_id: XComModel.deserialize_value(row) for row in rows}
    return {"state": str(run.state), "run_id": run.run_id, "xcoms": xcoms, "run_seconds": run_seconds}


def main(argv: list[str] | None = None) -> int:
    """Run the demo; argv may hold one JSON object of DAG params (the trigger form's values)."""
    from mlscale_emulator import control, local_project

    project = local_project.load()
    repo = Path(os.environ.get("MLSCALE_REPO", Path.cwd())).resolve()
    config = emulator_settings(repo)
    env = {**os.environ, **airflow_environment(repo, control.connection_uri(config))}
    # dag.test() runs the whole DAG in this one process: SQLite is enough (`mlscale airflow`'s PostgreSQL,
    # named in the shared home's airflow.cfg, need not run)
    env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{env['AIRFLOW_HOME']}/airflow.db"
    # before anything imports Airflow (the params check does): it reads its configuration once
    os.environ.update(env)
    # dag.test() resumes a deferred task in this process: the scheduler race the triggers wait out
    # (mlscale.triggers) cannot happen, so their first event need not be held
    os.environ["AIRFLOW__MLSCALE__FIRST_EVENT_DELAY"] = "0"
    try:
        conf = project.demo_conf(argv[0]) if argv else {}
    except ValueError as error:
        print(f"mlscale demo: {error}", file=sys.stderr)
        return 2
    started = time.monotonic()
    emulator_started = control.ensure_up(config)  # a running emulator (`mlscale airflow`'s) is reused, left running
    try:
        control.provision_edge_fleet(config)  # the simulated Greengrass core devices the DAG deploys to
        subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"], env=env, check=True, stdout=subprocess.DEVNULL
        )
        project.prepare_airflow()
        result = project.demo(repo, run_dag, conf, lambda service: control.client(config, service))
    finally:
        if emulator_started:
            control.down(config)
    print(project.summary(result, time.monotonic() - started))
    return 0 if result["state"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())
