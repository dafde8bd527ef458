"""Athena on the emulator: real SQL over Glue tables in S3, with Athena's statuses and errors."""

from __future__ import annotations

import time
from datetime import date

import pytest

from mlscale_example.datasets.raw_digits import write_day

pytestmark = pytest.mark.emulator

DAYS = [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]


@pytest.fixture(scope="module")
def raw_table(emulator, clients):
    import boto3

    glue = boto3.client("glue", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    for day in DAYS:
        write_day(clients["s3"], "mlscale-test", "athena/raw", day, 1000)
    glue.create_database(DatabaseInput={"Name": "athena_test"})
    glue.create_table(
        DatabaseName="athena_test",
        TableInput={
            "Name": "raw_digits",
            "PartitionKeys": [{"Name": "dt", "Type": "string"}],
            "StorageDescriptor": {
                "Location": "s3://mlscale-test/athena/raw/",
                "Columns": [
                    {"Name": "record_id", "Type": "string"},
                    {"Name": "label", "Type": "bigint"},
                    {"Name": "pixels", "Type": "binary"},
                ],
                "InputFormat": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "SerdeInfo": {"SerializationLibrary": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"},
            },
        },
    )
    return boto3.client("athena", endpoint_url=emulator.endpoint_url, region_name="us-east-1")


def run(athena, query: str) -> tuple[str, dict]:
    states = []
    execution_id = athena.start_query_execution(
        QueryString=query,
        QueryExecutionContext={"Database": "athena_test"},
        ResultConfiguration={"OutputLocation": "s3://mlscale-test/athena/results/"},
    )["QueryExecutionId"]
    while True:
        execution = athena.get_query_execution(QueryExecutionId=execution_id)["QueryExecution"]
        states.append(execution["Status"]["State"])
        if states[-1] not in ("QUEUED", "RUNNING"):
            return execution_id, execution
        time.sleep(0.1)


def rows(athena, execution_id: str, page: int = 1000) -> list[list[str | None]]:
    paginator = athena.get_paginator("get_query_results")
    out = []
    for result in paginator.paginate(QueryExecutionId=execution_id, PaginationConfig={"PageSize": page}):
        out += [[d.get("VarCharValue") for d in row["Data"]] for row in result["ResultSet"]["Rows"]]
    return out


def test_select_over_partitions_with_athena_functions(raw_table, clients):
    execution_id, execution = run(
        raw_table,
        "SELECT dt, count(*) AS n, approx_percentile(label, 0.5) AS median "
        "FROM raw_digits WHERE dt BETWEEN '2026-11-01' AND '2026-11-02' "
        "GROUP BY dt ORDER BY dt",
    )
    assert execution["Status"]["State"] == "SUCCEEDED"
    assert execution["Statistics"]["DataScannedInBytes"] > 0
    result = rows(raw_table, execution_id)
    assert result[0] == ["dt", "n", "median"]  # the header row, as Athena returns it
    assert [r[:2] for r in result[1:]] == [["2026-11-01", "1000"], ["2026-11-02", "1000"]]
    # the CSV at the output location, as Athena writes it
    csv = clients["s3"].get_object(Bucket="mlscale-test", Key=f"athena/results/{execution_id}.csv")["Body"].read()
    assert csv.decode().splitlines()[:2] == ['"dt","n","median"', f'"2026-11-01","1000","{result[1][2]}"']


def test_results_are_paged(raw_table):
    execution_id, _ = run(raw_table, "SELECT record_id FROM raw_digits WHERE dt = '2026-11-03' ORDER BY record_id")
    result = rows(raw_table, execution_id, page=300)
    assert len(result) == 1001 and result[1] == ["20261103-00000000"] and result[-1] == ["20261103-00000999"]


def test_empty_interval_gives_no_rows(raw_table):
    execution_id, execution = run(raw_table, "SELECT count(*) AS n FROM raw_digits WHERE dt = '2030-01-01'")
    assert execution["Status"]["State"] == "SUCCEEDED"
    assert rows(raw_table, execution_id) == [["n"], ["0"]]


def test_unload_writes_parquet_and_refuses_a_used_location(raw_table, clients):
    import io

    import pyarrow.parquet as pq

    query = (
        "UNLOAD (SELECT record_id, label, pixels FROM raw_digits WHERE dt >= '2026-11-02') "
        "TO 's3://mlscale-test/athena/etl/run-1/' WITH (format = 'PARQUET')"
    )
    assert run(raw_table, query)[1]["Status"]["State"] == "SUCCEEDED"
    keys = [
        o["Key"] for o in clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="athena/etl/run-1/")["Contents"]
    ]
    tables = [
        pq.read_table(io.BytesIO(clients["s3"].get_object(Bucket="mlscale-test", Key=k)["Body"].read())) for k in keys
    ]
    assert sum(t.num_rows for t in tables) == 2000 and tables[0].column_names == ["record_id", "label", "pixels"]
    again = run(raw_table, query)[1]["Status"]
    assert again["State"] == "FAILED" and again["StateChangeReason"].startswith("HIVE_PATH_ALREADY_EXISTS")


BAD_SQL = [
    ("SELECT nope FROM raw_digits", 'Referenced column "nope" not found'),
    ("SELECT * FROM missing_table", "TABLE_NOT_FOUND: Table 'awsdatacatalog.athena_test.missing_table' does not exist"),
    ("INSERT INTO raw_digits VALUES (1)", "the emulator's Athena does not run INSERT statements; it accepts SELECT"),
    ("SELEC label FROM raw_digits", "does not run SELEC statements"),
    ("SELECT label FROM raw_digits WHERE", "line 1"),
    ("UNLOAD (SELECT 1) TO 's3://mlscale-test/x/' WITH (format = 'ORC')", "UNLOAD format ORC is not supported"),
]


@pytest.mark.parametrize("query, reason", BAD_SQL)
def test_bad_sql_fails_with_the_reason(raw_table, query, reason):
    status = run(raw_table, query)[1]["Status"]
    assert status["State"] == "FAILED"
    assert reason in status["StateChangeReason"]


def test_results_of_a_failed_query_are_refused(raw_table):
    from botocore.exceptions import ClientError

    execution_id, _ = run(raw_table, "SELECT nope FROM raw_digits")
    with pytest.raises(ClientError, match="Final query state: FAILED"):
        raw_table.get_query_results(QueryExecutionId=execution_id)


def test_duckdb_runs_in_an_engine_process_not_in_the_emulator_server(raw_table, emulator):
    import psutil

    from mlscale_emulator import control

    _, execution = run(raw_table, "SELECT label, count(*) AS n FROM raw_digits GROUP BY label")
    assert execution["Status"]["State"] == "SUCCEEDED"
    server = psutil.Process(control.running_pid(emulator))
    assert not [m.path for m in server.memory_maps() if "duckdb" in m.path]


def test_batch_get_answers_many_queries_and_names_the_unknown_ones(raw_table):
    from mlscale.waits.kinds import ATHENA_QUERY

    first, _ = run(raw_table, "SELECT count(*) FROM raw_digits")
    second, _ = run(raw_table, "SELECT max(label) FROM raw_digits")
    unknown = "00000000-0000-0000-0000-000000000000"
    answer = raw_table.batch_get_query_execution(QueryExecutionIds=[first, unknown, second])
    assert [q["QueryExecutionId"] for q in answer["QueryExecutions"]] == [first, second]
    assert all(q["Status"]["State"] == "SUCCEEDED" for q in answer["QueryExecutions"])
    assert [(u["QueryExecutionId"], u["ErrorCode"]) for u in answer["UnprocessedQueryExecutionIds"]] == [
        (unknown, "InvalidRequestException")
    ]
    # the waits' batch read: an id the batch could not answer is asked alone, whose error code decides
    found = ATHENA_QUERY.describe_many(raw_table, [first, unknown, second])
    assert found[unknown] is None and found[first]["Status"]["State"] == "SUCCEEDED"
