"""ETL as a stage: one Athena query (UNLOAD or CTAS) that writes the run's data under a prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.athena import AthenaHook

from mlscale.operators.athena_query import start_or_reattach
from mlscale.operators.caching import CacheParts
from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.etl import AthenaEtlSpec
from mlscale.waits.kinds import ATHENA_QUERY

if TYPE_CHECKING:
    from airflow.sdk import Context


class AthenaEtlOperator(StageOperator):
    """Run the spec's query and wait for it; the result names the data it wrote.

    What the provider's AthenaOperator does (StartQueryExecution, a deferred wait, StopQueryExecution on
    kill), on the stage model, so ETL has a fingerprint and can be cached: the query text with its own
    `data_prefix` left out, the database, and the objects of the prefixes it reads (`inputs`). The query is
    started once per task run (mlscale.operators.athena_query): a retried try reattaches to it. Each attempt
    is recorded as an empty object `<data_prefix>.attempts/<n>` before it starts, so a try knows the newest
    attempt of its run; what a FAILED or CANCELLED attempt left under `data_prefix` is removed before the
    next one starts (an UNLOAD needs an empty location), never while a query of the run may still write there.
    XCom: query_execution_id, data_prefix, objects, bytes, data_scanned_bytes.
    """

    def _attempts_location(self) -> tuple[str, str]:
        bucket, prefix = self.s3_hook().parse_s3_url(self.spec.data_prefix)
        return bucket, prefix.rstrip("/") + ".attempts/"

    def _attempts_started(self) -> int:
        bucket, prefix = self._attempts_location()
        keys = self.s3_hook().list_keys(bucket_name=bucket, prefix=prefix) or []
        return max((int(k.rsplit("/", 1)[-1]) for k in keys if k.rsplit("/", 1)[-1].isdigit()), default=0)

    def _mark_attempt(self, attempt: int) -> None:
        bucket, prefix = self._attempts_location()
        self.s3_hook().load_bytes(b"", key=f"{prefix}{attempt}", bucket_name=bucket, replace=True)

    def _next_attempt(self, ended_query_id: str, attempt: int) -> None:
        """Every attempt of this run so far has ended: remove what they left, then record the next one."""
        s3 = self.s3_hook()
        bucket, prefix = s3.parse_s3_url(self.spec.data_prefix)
        left = s3.list_keys(bucket_name=bucket, prefix=prefix)
        if left:
            s3.delete_objects(bucket=bucket, keys=left)
            self.log.info(
                "Deleted %d object(s) query %s left under %s", len(left), ended_query_id, self.spec.data_prefix
            )
        self._mark_attempt(attempt)

    aws_hook_class = AthenaHook
    template_ext = (".sql",)
    ui_color = "#ede4ff"
    cache_stage = "etl"
    cache_noun = "Athena query"
    cache_job_key = "query_execution_id"

    def __init__(self, *, spec: AthenaEtlSpec, poll_interval: float = 2, **kwargs: Any):
        super().__init__(spec=spec, poll_interval=poll_interval, **kwargs)

    def cache_parts(self, context: Context) -> CacheParts:
        request = self.spec.request()
        request.pop("ResultConfiguration")  # where Athena keeps its result files does not change the data
        return CacheParts(request, inputs=dict(self.spec.inputs), outputs={"data": self.spec.data_prefix})

    def cache_reusable(self, entry: dict[str, Any]) -> str | None:
        query = ATHENA_QUERY.describe_or_none(self.hook.conn, entry["job"])
        if query is not None and ATHENA_QUERY.status(query) not in ATHENA_QUERY.succeeded:
            return f"it is {ATHENA_QUERY.status(query)}"
        # Athena keeps a query's history 45 days; the data it wrote is what counts
        return super().cache_reusable(entry)

    def lineage(self, context: Context, result: dict[str, Any]) -> tuple[list, list, dict]:
        """The tables the SQL reads and the raw prefixes; the data it wrote, with its Parquet schema."""
        from mlscale.aws import lineage

        region, spec = self.hook.conn_region_name, self.spec
        tables = [
            lineage.athena_table(region, db, table) for db, table in lineage.tables_read(spec.query, spec.database)
        ]
        raw = [lineage.s3(uri) for uris in spec.inputs.values() for uri in ([uris] if isinstance(uris, str) else uris)]
        schema = lineage.parquet_schema(self.s3_hook().get_conn(), spec.data_prefix)
        details = {
            "query_execution_id": result["query_execution_id"],
            "data_scanned_bytes": result["data_scanned_bytes"],
            "objects": result["objects"],
            "bytes": result["bytes"],
        }
        return tables + raw, [lineage.s3(spec.data_prefix, schema=schema or None)], details

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        if settled is None:
            started = self._attempts_started()
            if not started:
                self._mark_attempt(1)
            query_id, query = start_or_reattach(
                self.hook.conn,
                self.spec.request(),
                context,
                "etl",
                self.log,
                first_attempt=max(1, started),
                before_next_attempt=self._next_attempt,
            )
            if not ATHENA_QUERY.settled(query):
                self.log.info(
                    "Athena query %s (%s) writes %s", query_id, ATHENA_QUERY.status(query), self.spec.data_prefix
                )
                return Wait(ATHENA_QUERY, query_id)
            settled = {"resource_id": query_id}  # a try before this one saw it through
        query = ATHENA_QUERY.describe(self.hook.conn, settled["resource_id"])
        bucket, _, prefix = self.spec.data_prefix.removeprefix("s3://").partition("/")
        pages = self.s3_hook().get_conn().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        objects = [obj for page in pages for obj in page.get("Contents", [])]
        return {
            "query_execution_id": settled["resource_id"],
            "state": ATHENA_QUERY.status(query),
            "data_prefix": self.spec.data_prefix,
            "objects": len(objects),
            "bytes": sum(obj["Size"] for obj in objects),
            "data_scanned_bytes": (query.get("Statistics") or {}).get("DataScannedInBytes"),
        }
