"""AthenaEtlSpec: an ETL query (UNLOAD or CTAS) that writes one run's data under a prefix, and what it reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.quality import IDENTIFIER
from mlscale.specs.rules import require


@dataclass
class AthenaEtlSpec:
    query: str  # the SQL (a .sql file under the DAG's template_searchpath is read and rendered)
    database: str
    data_prefix: str  # where the query writes (UNLOAD ... TO, CTAS external_location): emptied before each query
    output_location: str  # Athena's query results (s3://...)
    # name -> the s3:// prefix(es) the query reads (the partitions of its window): the stage's fingerprint
    # hashes their objects, so the cache reruns the query when the data changes
    inputs: dict[str, str | list[str]] = field(default_factory=dict)
    workgroup: str = "primary"

    template_fields = ("query", "database", "data_prefix", "output_location", "inputs", "workgroup")

    def validate(self) -> None:
        coerce_fields(self)
        require(isinstance(self.query, str) and bool(self.query.strip()), "query", "is required (SQL text)")
        require(
            isinstance(self.database, str) and bool(IDENTIFIER.match(self.database)),
            "database",
            "must be lower-case letters, digits and '_' (a Glue database name)",
            self.database,
        )
        rules.s3_uri(self.data_prefix, "data_prefix")
        require(self.data_prefix.endswith("/"), "data_prefix", "must end with '/' (a prefix)", self.data_prefix)
        require(
            self.data_prefix in self.query,
            "data_prefix",
            "must be where the query writes: it does not appear in the query",
            self.data_prefix,
        )
        rules.s3_uri(self.output_location, "output_location")
        require(isinstance(self.inputs, dict), "inputs", "must map names to s3:// prefixes", self.inputs)
        for name, uris in self.inputs.items():
            for uri in [uris] if isinstance(uris, str) else list(uris):
                rules.s3_uri(uri, f"inputs[{name!r}]")
        require(
            re.match(r"^[a-zA-Z0-9._-]{1,128}\Z", self.workgroup or "") is not None,
            "workgroup",
            "must be 1-128 letters, digits, '.', '_' and '-'",
            self.workgroup,
        )

    def request(self) -> dict:
        return {
            "QueryString": self.query,
            "QueryExecutionContext": {"Database": self.database},
            "ResultConfiguration": {"OutputLocation": self.output_location},
            "WorkGroup": self.workgroup,
        }
