"""Runs an Athena query for real on DuckDB over the objects in the emulator's S3.

Tables resolve through the Glue Data Catalog to their S3 location; their
objects are copied to a local cache (DuckDB's httpfs extension cannot be
downloaded on these machines) and read with hive partitioning, by DuckDB in a
process of its own (mlscale_emulator.executors.athena_engine). SELECT results
are written as Athena writes them (<OutputLocation>/<id>.csv) and paged by
GetQueryResults; UNLOAD writes its files to the TO location, which must be
empty, as Athena requires.
"""

from __future__ import annotations

import csv
import io
import logging
import shutil
import threading
import time
from typing import Any

from mlscale_emulator import confine, settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.executors.athena_engine import EngineError, engine_message, identifier, literal, run_plan
from mlscale_emulator.executors.athena_sql import QueryError, Statement, classify, table_references, to_duckdb
from mlscale_emulator.transitions import ATHENA_QUERY, check

log = logging.getLogger(__name__)
FORMATS = {"parquet": "read_parquet", "csv": "read_csv", "json": "read_json_auto"}


class QueryRun:
    def __init__(self, execution: Any, region: str):
        self.execution = execution
        self.region = region
        self.work_dir = settings.current().jobs_dir / "athena" / execution.id
        self.columns: list[dict[str, str]] = []
        self.rows: list[list[str | None]] = []
        self.thread = threading.Thread(target=self._run, name=f"athena-{execution.id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _move(self, status: str) -> None:
        check(ATHENA_QUERY, f"query {self.execution.id}", self.execution.status, status)
        self.execution.status = status

    def _run(self) -> None:
        execution = self.execution
        self._move("RUNNING")
        started = time.time()
        try:
            statement = classify(execution.query)
            if statement.kind != "ddl":
                self._execute(statement)
            if execution.status == "CANCELLED":
                return
            self._move("SUCCEEDED")
        except QueryError as error:
            self._fail(str(error))
        except EngineError as error:  # DuckDB's own errors are the engine's reason, as Athena's are Trino's
            self._fail(str(error))
        except Exception as error:  # noqa: BLE001 - S3, Glue or the engine process itself
            log.exception("athena query %s crashed", execution.id)
            self._fail(engine_message(error))
        finally:
            execution.end_time = time.time()
            execution.engine_millis = int((time.time() - started) * 1000)
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _fail(self, reason: str) -> None:
        if self.execution.status == "CANCELLED":  # StopQueryExecution came first
            return
        self._move("FAILED")
        self.execution.state_change_reason = reason
        log.info("athena query %s failed: %s", self.execution.id, reason)

    def _execute(self, statement: Statement) -> None:
        s3 = settings.aws_client("s3", self.region)
        glue = settings.aws_client("glue", self.region)
        default_db = (self.execution.context or {}).get("Database") or "default"
        self.work_dir.mkdir(parents=True, exist_ok=True)
        views, scanned = [], 0
        for database, table in table_references(statement.select_sql):
            scanned += self._register_table(views, s3, glue, database or default_db, table)
        self.execution.data_scanned = scanned
        plan = {
            "database_file": str(self.work_dir / "query.duckdb"),
            "views": views,
            "default_db": default_db,
            "sql": to_duckdb(statement.select_sql),
            "kind": statement.kind,
        }
        if statement.kind == "unload":
            self._unload(s3, plan, statement)
        else:
            self._select(s3, run_plan(plan))

    def _register_table(self, views: list[str], s3, glue, database: str, table: str) -> int:
        """Download the table's objects; add the statements that make it a view; the bytes scanned."""
        try:
            described = glue.get_table(DatabaseName=database, Name=table)["Table"]
        except glue.exceptions.EntityNotFoundException:
            raise QueryError(f"TABLE_NOT_FOUND: Table 'awsdatacatalog.{database}.{table}' does not exist") from None
        storage = described.get("StorageDescriptor", {})
        location = storage.get("Location", "")
        fmt = _table_format(described)
        try:  # Glue's NameString admits `/` and `..`: the names are checked as paths, and quoted in SQL
            local = confine.within(self.work_dir, "tables", database, table)
        except confine.PathEscape as error:
            raise QueryError(f"INVALID_TABLE_NAME: awsdatacatalog.{database}.{table}: {error}") from None
        scanned = s3io.download_prefix(s3, location.rstrip("/") + "/", local) if location else 0
        files = []
        for path in (p for p in local.rglob("*") if p.is_file()):
            if path.name.startswith(("_", ".")):  # Athena skips these (_SUCCESS, .crc): tables-location-format.html
                path.unlink()
            else:
                files.append(path)
        views.append(f"CREATE SCHEMA IF NOT EXISTS {identifier(database)}")
        view = f"{identifier(database)}.{identifier(table)}"
        if not files:  # an empty table still has its columns
            columns = ", ".join(
                f"NULL::{_duck_type(c['Type'])} AS {identifier(c['Name'])}"
                for c in storage.get("Columns", []) + described.get("PartitionKeys", [])
            )
            views.append(f"CREATE VIEW {view} AS SELECT {columns} WHERE false")
            return 0
        reader = FORMATS[fmt]
        partitioning = "true" if described.get("PartitionKeys") else "false"
        views.append(
            f"CREATE VIEW {view} AS SELECT * FROM {reader}({literal(str(local) + '/**/*')}, "
            f"hive_partitioning = {partitioning})"
        )
        return scanned

    def _select(self, s3, answer: dict) -> None:
        names = [name for name, _ in answer["columns"]]
        self.columns = [{"Name": n, "Label": n, "Type": _athena_type(t)} for n, t in answer["columns"]]
        self.rows = answer["rows"]
        self.execution.result_set = (self.columns, self.rows)  # kept with the execution, so a restore keeps it
        output = (self.execution.config or {}).get("OutputLocation")
        if output:  # moto already appended <id>.csv
            buffer = io.StringIO()
            writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
            writer.writerow(names)
            writer.writerows(self.rows)
            bucket, key = s3io.split_s3_uri(output)
            s3.put_object(Bucket=bucket, Key=key, Body=buffer.getvalue().encode())

    def _unload(self, s3, plan: dict, statement: Statement) -> None:
        destination = statement.destination.rstrip("/") + "/"
        if s3io.list_keys(s3, destination):
            raise QueryError(
                f"HIVE_PATH_ALREADY_EXISTS: Target directory for table already exists: {destination}. "
                "UNLOAD needs an empty location."
            )
        out = self.work_dir / "unload"
        out.mkdir(parents=True)
        options = [f"FORMAT {statement.unload_format}"]
        if statement.partitioned_by:
            options.append("PARTITION_BY (" + ", ".join(identifier(c) for c in statement.partitioned_by) + ")")
            target = str(out)
        else:
            target = str(out / f"{self.execution.id}_00000.{statement.unload_format.lower()}")
        run_plan({**plan, "copy_target": target, "copy_options": ", ".join(options)})
        s3io.upload_directory(s3, out, destination)


def _table_format(table: dict) -> str:
    storage = table.get("StorageDescriptor", {})
    serde = (storage.get("SerdeInfo", {}).get("SerializationLibrary") or "").lower()
    input_format = (storage.get("InputFormat") or "").lower()
    classification = (table.get("Parameters", {}).get("classification") or "").lower()
    if "parquet" in serde + input_format + classification:
        return "parquet"
    if "json" in serde + classification:
        return "json"
    if "csv" in serde + classification or "lazysimple" in serde or "textinputformat" in input_format:
        return "csv"
    raise QueryError(f"HIVE_UNSUPPORTED_FORMAT: table {table.get('Name')}: the emulator reads Parquet, CSV and JSON")


def _duck_type(glue_type: str) -> str:
    mapping = {
        "string": "VARCHAR",
        "int": "INTEGER",
        "bigint": "BIGINT",
        "double": "DOUBLE",
        "float": "FLOAT",
        "boolean": "BOOLEAN",
        "binary": "BLOB",
        "date": "DATE",
        "timestamp": "TIMESTAMP",
    }
    return mapping.get(glue_type.lower(), "VARCHAR")


def _athena_type(duck_type: str) -> str:
    upper = duck_type.upper()
    for prefix, athena in (
        ("BIGINT", "bigint"),
        ("INTEGER", "integer"),
        ("DOUBLE", "double"),
        ("FLOAT", "real"),
        ("BOOLEAN", "boolean"),
        ("VARCHAR", "varchar"),
        ("BLOB", "varbinary"),
        ("DATE", "date"),
        ("TIMESTAMP", "timestamp"),
        ("DECIMAL", "decimal"),
        ("HUGEINT", "decimal"),
    ):
        if upper.startswith(prefix):
            return athena
    return "varchar"
