"""DataQualityOperator against the emulator: Athena aggregates, plots and report in S3, the gate."""

from __future__ import annotations

import io
import re
from datetime import date

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowException

from mlscale.aws.catalog import ensure_parquet_table
from mlscale.operators import DataQualityOperator
from mlscale.specs import QualitySpec
from mlscale_example.datasets.raw_digits import generate_day
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator


def stage(clients, emulator, table: str, duplicate_share: float = 0.0) -> str:
    import boto3

    data = generate_day(date(2026, 10, 5), 2000)
    if duplicate_share:
        extra = data.slice(0, int(2000 * duplicate_share))
        data = pa.concat_tables([data, extra])
    buffer = io.BytesIO()
    pq.write_table(data, buffer)
    prefix = f"quality/{table}/"
    clients["s3"].put_object(Bucket="mlscale-test", Key=f"{prefix}dt=2026-10-05/part-0.parquet", Body=buffer.getvalue())
    glue = boto3.client("glue", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    ensure_parquet_table(
        glue,
        "quality_test",
        table,
        f"s3://mlscale-test/{prefix}",
        {"record_id": "string", "label": "bigint", "pixels": "binary"},
        date_partition="dt",
    )
    return f"s3://mlscale-test/{prefix}"


def operator(table: str, prefix: str, run: str) -> tuple[DataQualityOperator, dict]:
    spec = QualitySpec(
        database="quality_test",
        table=table,
        partition_start="2026-10-01",
        data_prefix=prefix,
        report_prefix=f"s3://mlscale-test/quality-reports/{table}",
        output_location="s3://mlscale-test/athena-results/",
    )
    op = DataQualityOperator(task_id="quality", spec=spec, poll_interval=0.2, deferrable=False)
    ti = FakeTI("quality", run_id=run)
    return op, {"ti": ti}


def test_duplicates_stop_the_pipeline_with_the_check_value_and_threshold(emulator, clients):
    prefix = stage(clients, emulator, "dupes", duplicate_share=0.1)
    op, context = operator("dupes", prefix, "manual__1")
    with pytest.raises(AirflowException, match=r"duplicate_fraction failed: 0.09091 \(must be <= 0.01\)"):
        op.execute(context)
    result = context["ti"].pushed["quality"]
    assert result["verdict"] == "failed"
    report = clients["s3"].get_object(Bucket="mlscale-test", Key=result["report_uri"].split("/", 3)[3])["Body"].read()
    assert b"FAILED" in report and b"duplicate_fraction" in report


def test_clean_data_passes_and_the_next_run_measures_drift(emulator, clients):
    prefix = stage(clients, emulator, "clean")
    op, context = operator("clean", prefix, "manual__1")
    first = op.execute(context)
    assert first["verdict"] == "passed" and first["rows"] == 2000 and first["drift"] == {}
    png = clients["s3"].get_object(Bucket="mlscale-test", Key=first["plots"][0].split("/", 3)[3])["Body"].read()
    assert png.startswith(b"\x89PNG")
    second = operator("clean", prefix, "manual__2")[0].execute(operator("clean", prefix, "manual__2")[1])
    assert second["drift"]["label_psi"] == pytest.approx(0.0) and len(second["plots"]) == 3  # drift.png too


def test_bad_threshold_is_refused_before_any_query(emulator, clients):
    from mlscale.specs import SpecError

    op, context = operator("clean", "s3://mlscale-test/nowhere/", "manual__3")
    op.spec.thresholds = {"max_dupes": 0.1}
    with pytest.raises(SpecError, match="thresholds: unknown threshold 'max_dupes'"):
        op.execute(context)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("database", "mlscale.raw_digits UNION SELECT 1 --", "database: must be an Athena identifier"),
        ("table", 'raw"; DROP TABLE x', "table: must be an Athena identifier"),
        ("partition_start", "2026-10-01' OR '1'='1", "partition_start: must be a date YYYY-MM-DD"),
        ("columns", ["label", "pixels) --"], "columns[1]: must be an Athena identifier"),
        ("thresholds", {"min_rows": 0}, "thresholds['min_rows']: must be an integer >= 1"),
        ("thresholds", "{'max_missing_fraction': 2}", "thresholds['max_missing_fraction']: must be a fraction"),
    ],
)
def test_sql_is_built_from_validated_identifiers_and_dates_only(field, value, message):
    from mlscale.specs import SpecError

    fields = dict(
        database="db",
        table="t",
        data_prefix="s3://mlscale-test/x/",
        report_prefix="s3://mlscale-test/r",
        output_location="s3://mlscale-test/a/",
    )
    spec = QualitySpec(**{**fields, field: value})
    with pytest.raises(SpecError, match=re.escape(message)):
        spec.validate()


def test_the_aggregate_query_quotes_identifiers_and_dates():
    spec = QualitySpec(
        database="mlscale",
        table="raw_digits",
        data_prefix="s3://bucket-1/x/",
        report_prefix="s3://bucket-1/r",
        output_location="s3://bucket-1/a/",
        partition_start="2026-10-04",
        partition_end="2026-10-11",
    )
    spec.validate()
    assert spec.aggregate_query().endswith(
        'FROM "mlscale"."raw_digits" WHERE "dt" >= \'2026-10-04\' AND "dt" < \'2026-10-11\''
    )
