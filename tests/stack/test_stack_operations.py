"""How the local stack runs: on its own PostgreSQL, every listener on loopback."""

from __future__ import annotations

import ipaddress
import shutil

import psutil

from tests.stack.conftest import AirflowStack


def test_the_stack_runs_on_postgresql_and_listens_on_loopback_only(airflow_stack: AirflowStack):
    # the home's airflow.cfg names the database, so a user's `airflow ...` on this home uses it too
    uri = airflow_stack.airflow_cli("config", "get-value", "database", "sql_alchemy_conn").strip()
    assert uri.startswith("postgresql+psycopg2://") and "host=" in uri
    assert "mlscale_pipeline" in airflow_stack.airflow_cli("dags", "list")

    port = airflow_stack.url.rsplit(":", 1)[1]
    root = next(
        p
        for p in psutil.process_iter(["cmdline"])
        if {"mlscale_emulator.cli", "airflow", port} <= set(p.info["cmdline"] or [])
    )  # `mlscale airflow --port N`
    family = {p.pid for p in [root, *root.children(recursive=True)]}  # Airflow's components, their workers
    listening = [c for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.pid in family]
    assert listening, "found none of the stack's listeners"
    assert all(ipaddress.ip_address(c.laddr.ip).is_loopback for c in listening), [
        (c.laddr, psutil.Process(c.pid).cmdline()[:4]) for c in listening
    ]
    if shutil.which("redis-server"):  # the stack tests run Celery, as docker-compose.yaml does
        commands = [" ".join(p.cmdline()) for p in root.children()]
        assert sum("celery worker" in c for c in commands) == 2 and any("redis-server" in c for c in commands)
