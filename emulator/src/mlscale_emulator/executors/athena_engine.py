"""The emulator's Athena engine: DuckDB in a process of its own, as Athena's engine is a service of its own.

The emulator server resolves the tables and downloads their objects (mlscale_emulator.executors.athena), then
runs `python -m mlscale_emulator.executors.athena_engine` with a plan as JSON on stdin: the views to create,
the query, and for UNLOAD where to COPY. The engine answers JSON on stdout: a SELECT's columns (DuckDB types)
and rows as Athena's text, or nothing for UNLOAD; a failed query exits ENGINE_ERROR_EXIT with the engine's
message. DuckDB's memory (tens to hundreds of MB for a query) is this process's and goes when it ends.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

ENGINE_ERROR_EXIT = 3


class EngineError(Exception):
    """DuckDB refused or failed the query: the message is Athena's reason."""


def run_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """Run the plan in the engine process; its answer, or EngineError with the engine's message."""
    from mlscale_emulator import job_env

    done = subprocess.run(
        [sys.executable, "-m", __name__], input=json.dumps(plan), capture_output=True, text=True, env=job_env.base()
    )
    last = (done.stdout.strip().splitlines() or ["{}"])[-1]
    if done.returncode == 0:
        return json.loads(last)
    if done.returncode == ENGINE_ERROR_EXIT:
        raise EngineError(json.loads(last)["error"])
    raise RuntimeError(f"the Athena engine exited with {done.returncode}: {done.stderr.strip()[-500:]}")


def execute(plan: dict[str, Any]) -> dict[str, Any]:
    import duckdb

    connection = duckdb.connect(plan["database_file"])
    try:
        for statement in plan["views"]:
            connection.execute(statement)
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {identifier(plan['default_db'])}")
        # unqualified names resolve in the context's database: a value, never pasted as SQL
        connection.execute(f"SET schema = {literal(plan['default_db'])}")
        if plan["kind"] == "unload":
            connection.execute(f"COPY ({plan['sql']}) TO {literal(plan['copy_target'])} ({plan['copy_options']})")
            return {}
        result = connection.execute(plan["sql"])
        columns = [[d[0], str(d[1])] for d in result.description]
        return {"columns": columns, "rows": [[text(v) for v in row] for row in result.fetchall()]}
    finally:
        connection.close()


def identifier(name: str) -> str:
    """A name quoted as an SQL identifier (a `"` in it doubled), so that no name is read as SQL."""
    return '"' + str(name).replace('"', '""') + '"'


def literal(value: str) -> str:
    """A value quoted as an SQL string literal (a `'` in it doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def text(value: Any) -> str | None:
    """A value as Athena's GetQueryResults shows it."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return " ".join(f"{b:02x}" for b in value)  # Athena shows varbinary as hex
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def engine_message(error: Exception) -> str:
    message = str(error).strip()
    return message.splitlines()[0] if message else type(error).__name__


def main() -> int:
    plan = json.loads(sys.stdin.read())
    try:
        answer = execute(plan)
    except Exception as error:  # noqa: BLE001 - DuckDB's own errors are the engine's reason, as Trino's are Athena's
        print(json.dumps({"error": engine_message(error)}))
        return ENGINE_ERROR_EXIT
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
