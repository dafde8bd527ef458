"""The Athena SQL the emulator accepts, and its translation to DuckDB.

Accepted: SELECT (WITH ... SELECT), UNLOAD (SELECT ...) TO 's3://...' WITH
(format = 'PARQUET' | 'JSON' | 'TEXTFILE', partitioned_by = ARRAY[...]),
CREATE/DROP DATABASE (moto's). Tables come from the Glue Data Catalog
(Parquet, CSV or JSON at their S3 location, hive-style partition folders).
Functions and syntax are translated from Athena (Trino) to DuckDB by sqlglot.
Anything else is refused with a message naming what is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ACCEPTED = "SELECT, WITH ... SELECT, UNLOAD (SELECT ...) TO 's3://...', CREATE/DROP DATABASE"
_UNLOAD = re.compile(
    r"^\s*UNLOAD\s*\((?P<select>.*)\)\s*TO\s*'(?P<to>s3://[^']+)'\s*(?:WITH\s*\((?P<props>.*)\))?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_PROPERTY = re.compile(r"(\w+)\s*=\s*(ARRAY\s*\[[^\]]*\]|'[^']*')", re.IGNORECASE)
_DATABASE_DDL = re.compile(r"^\s*(CREATE|DROP)\s+(DATABASE|SCHEMA)\b", re.IGNORECASE)
UNLOAD_FORMATS = {"PARQUET": "PARQUET", "JSON": "JSON", "TEXTFILE": "CSV"}


class QueryError(Exception):
    """The query fails; the message becomes the execution's StateChangeReason."""


@dataclass
class Statement:
    kind: str  # "select" | "unload" | "ddl"
    select_sql: str = ""  # Athena SQL of the SELECT part
    destination: str | None = None
    unload_format: str = "PARQUET"
    partitioned_by: list[str] = field(default_factory=list)


_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


def classify(query: str) -> Statement:
    text = _COMMENTS.sub(" ", query).strip().rstrip(";").strip()
    if _DATABASE_DDL.match(text):
        return Statement("ddl")
    unload = _UNLOAD.match(text)
    if unload:
        props = {k.lower(): v for k, v in _PROPERTY.findall(unload.group("props") or "")}
        fmt = props.get("format", "'PARQUET'").strip("'").upper()
        if fmt not in UNLOAD_FORMATS:
            raise QueryError(
                f"UNLOAD format {fmt} is not supported by the emulator; use one of {sorted(UNLOAD_FORMATS)}"
            )
        partitioned = re.findall(r"'([^']+)'", props.get("partitioned_by", ""))
        return Statement("unload", unload.group("select"), unload.group("to"), UNLOAD_FORMATS[fmt], partitioned)
    first = text.split(None, 1)[0].upper() if text else ""
    if first in ("SELECT", "WITH", "(") or first.startswith("("):
        return Statement("select", text)
    raise QueryError(f"the emulator's Athena does not run {first or 'an empty'} statements; it accepts {ACCEPTED}")


def table_references(select_sql: str) -> list[tuple[str | None, str]]:
    """(database, table) for every table the query reads, CTE names left out."""
    from sqlglot import exp

    tree = _parse(select_sql)
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    refs = []
    for table in tree.find_all(exp.Table):
        if table.name in ctes and not table.db:
            continue
        refs.append((table.db or None, table.name))
    return sorted(set(refs), key=lambda r: (r[0] or "", r[1]))


def to_duckdb(select_sql: str) -> str:
    return _parse(select_sql).sql(dialect="duckdb")


def _parse(sql: str):
    import sqlglot
    from sqlglot.errors import ParseError

    try:
        return sqlglot.parse_one(sql, read="athena")
    except ParseError as error:
        raise QueryError(
            f"line {_first_error_line(error)}: {error.errors[0]['description'] if error.errors else error}"
        ) from error


def _first_error_line(error) -> str:
    return str(error.errors[0].get("line", "?")) if getattr(error, "errors", None) else "?"
