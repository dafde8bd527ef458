"""QualitySpec: which table and partitions to profile, where the ETL output and the report are, the thresholds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.errors import SpecError
from mlscale.specs.rules import require

# Athena (Hive/Glue) identifiers: lower-case letters, digits and underscores; no quoting games
IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,254}\Z")


@dataclass
class QualitySpec:
    database: str
    table: str
    data_prefix: str  # the ETL output the profile reads (s3://...)
    report_prefix: str  # plots, report.html and the drift baseline go under it
    output_location: str  # Athena query results
    partition_column: str = "dt"
    partition_start: str | None = None  # YYYY-MM-DD, inclusive
    partition_end: str | None = None  # YYYY-MM-DD, exclusive
    key_column: str = "record_id"
    columns: list[str] = field(default_factory=lambda: ["label", "pixels"])
    thresholds: dict[str, Any] = field(default_factory=dict)  # mlscale.quality.profile.QualityThresholds
    workgroup: str = "primary"

    template_fields = (
        "database",
        "table",
        "data_prefix",
        "report_prefix",
        "output_location",
        "partition_start",
        "partition_end",
        "thresholds",
    )

    def validate(self) -> None:
        coerce_fields(self)
        for name in ("database", "table", "partition_column", "key_column"):
            _identifier(getattr(self, name), name)
        require(isinstance(self.columns, list) and len(self.columns) >= 1, "columns", "must list at least one column")
        for index, column in enumerate(self.columns):
            _identifier(column, f"columns[{index}]")
        for name in ("data_prefix", "report_prefix", "output_location"):
            rules.s3_uri(getattr(self, name), name)
        for name in ("partition_start", "partition_end"):
            value = getattr(self, name)
            if value is not None:
                try:
                    date.fromisoformat(value)
                except (TypeError, ValueError):
                    raise SpecError(name, "must be a date YYYY-MM-DD", value) from None
        require(
            re.match(r"^[a-zA-Z0-9._-]{1,128}\Z", self.workgroup or "") is not None,
            "workgroup",
            "must be 1-128 letters, digits, '.', '_' and '-'",
            self.workgroup,
        )
        self.quality_thresholds()

    def quality_thresholds(self):
        from mlscale.quality.profile import QualityThresholds

        require(isinstance(self.thresholds, dict), "thresholds", "must be a mapping of threshold to value")
        known = set(QualityThresholds.__dataclass_fields__)
        unknown = sorted(set(self.thresholds) - known)
        require(
            not unknown,
            "thresholds",
            f"unknown threshold {unknown[0] if unknown else ''!r}; known: {', '.join(sorted(known))}",
        )
        thresholds = QualityThresholds(**self.thresholds)
        try:
            thresholds.validate()
        except SpecError as error:
            raise SpecError(f"thresholds[{error.field!r}]", error.rule) from None
        return thresholds

    def aggregate_query(self) -> str:
        """Counts, distinct keys and missing values; identifiers validated, dates validated and quoted."""
        missing = ", ".join(f'sum(CASE WHEN "{c}" IS NULL THEN 1 ELSE 0 END) AS missing_{c}' for c in self.columns)
        conditions = []
        if self.partition_start:
            conditions.append(f"\"{self.partition_column}\" >= '{self.partition_start}'")
        if self.partition_end:
            conditions.append(f"\"{self.partition_column}\" < '{self.partition_end}'")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return (
            f'SELECT count(*) AS row_count, count(DISTINCT "{self.key_column}") AS distinct_keys, {missing} '
            f'FROM "{self.database}"."{self.table}"{where}'
        )


def _identifier(value: Any, field: str) -> None:
    require(
        isinstance(value, str) and bool(IDENTIFIER.match(value)),
        field,
        "must be an Athena identifier: lower-case letters, digits and '_', starting with a letter or '_'",
        value,
    )
