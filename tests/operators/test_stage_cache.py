"""The stage cache against the emulator: hits launch nothing, every change that decides the output misses."""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, date, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowException

from mlscale.aws.catalog import ensure_parquet_table
from mlscale.aws.stage_cache import FINGERPRINT_TAG
from mlscale.operators import (
    AthenaEtlOperator,
    SageMakerEndpointDeployOperator,
    SageMakerProcessingScriptOperator,
)
from mlscale.specs import (
    AthenaEtlSpec,
    CacheConfig,
    EndpointSpec,
    ProcessingInput,
    ProcessingOutput,
    ProcessingSpec,
    SpecError,
)
from tests.conftest import ROLE_ARN
from tests.operators.test_training_operator import QUICK, FakeTI, make_operator

pytestmark = pytest.mark.emulator

FAILING = "raise RuntimeError('out of cheese')\n"
COPY = """import shutil, sys
shutil.copytree('/opt/ml/processing/input/data', '/opt/ml/processing/output/out', dirs_exist_ok=True)
print('copied', sys.argv[1:])
"""


def cache(location: str, **kwargs) -> CacheConfig:
    return CacheConfig(enabled=True, location=location, **kwargs)


@pytest.fixture
def location() -> str:
    return f"s3://mlscale-test/cache-tests/{uuid.uuid4().hex[:8]}"


def run_training(tmp_path, task_id: str, run: str, script: str = QUICK, **kwargs) -> dict:
    operator, context = make_operator(tmp_path, script, task_id, deferrable=False, **kwargs)
    context["ti"] = FakeTI(task_id, run_id=run)
    return operator.execute(context)


def training_jobs(clients, fragment: str) -> list[str]:
    pages = clients["sagemaker"].get_paginator("list_training_jobs").paginate(NameContains=fragment)
    return [j["TrainingJobName"] for page in pages for j in page["TrainingJobSummaries"]]


def test_an_unchanged_stage_reuses_the_first_runs_job_and_launches_nothing(emulator, clients, tmp_path, location):
    first = run_training(tmp_path, "cached", "manual__run-1", cache=cache(location))
    assert first["cache"] == {"hit": False, "enabled": True}
    arn = clients["sagemaker"].describe_training_job(TrainingJobName=first["job_name"])["TrainingJobArn"]
    tags = {t["Key"]: t["Value"] for t in clients["sagemaker"].list_tags(ResourceArn=arn)["Tags"]}
    assert tags[FINGERPRINT_TAG] == first["fingerprint"]

    second = run_training(tmp_path, "cached", "manual__run-2", cache=cache(location))
    assert second["cache"]["hit"] is True
    assert second["cache"]["reused"] == first["job_name"] and second["cache"]["from_run"] == "manual__run-1"
    assert second["model_artifact"] == first["model_artifact"] and second["fingerprint"] == first["fingerprint"]
    assert training_jobs(clients, "operator-tests-cached") == [first["job_name"]]  # no second job


def test_without_the_cache_the_fingerprint_is_still_reported_and_a_new_job_runs(emulator, clients, tmp_path):
    first = run_training(tmp_path, "uncached", "manual__run-1")
    second = run_training(tmp_path, "uncached", "manual__run-2")
    assert first["fingerprint"] == second["fingerprint"] and len(first["fingerprint"]) == 64
    assert second["cache"] == {"hit": False, "enabled": False}
    assert len(training_jobs(clients, "operator-tests-uncached")) == 2


def test_a_hyperparameter_a_code_change_and_the_version_each_miss(emulator, clients, tmp_path, location):
    base = run_training(tmp_path, "changes", "manual__run-1", cache=cache(location))
    hp = run_training(
        tmp_path, "changes", "manual__run-2", cache=cache(location), spec={"hyperparameters": {"lr": 0.1}}
    )
    code = run_training(tmp_path, "changes", "manual__run-3", script=QUICK + "# a comment\n", cache=cache(location))
    version = run_training(tmp_path, "changes", "manual__run-4", cache=cache(location, version="2"))
    prints = {base["fingerprint"], hp["fingerprint"], code["fingerprint"], version["fingerprint"]}
    assert len(prints) == 4 and not any(r["cache"]["hit"] for r in (hp, code, version))
    assert len(training_jobs(clients, "operator-tests-changes")) == 4
    # and the same hyperparameter again is a hit on its own job
    again = run_training(
        tmp_path, "changes", "manual__run-5", cache=cache(location), spec={"hyperparameters": {"lr": 0.1}}
    )
    assert again["cache"]["reused"] == hp["job_name"]


def test_changed_input_data_misses_unless_that_input_is_ignored(emulator, clients, tmp_path, location):
    s3 = clients["s3"]
    s3.put_object(Bucket="mlscale-test", Key="cache-data/train/a.csv", Body=b"1,2\n")
    s3.put_object(Bucket="mlscale-test", Key="cache-data/test/a.csv", Body=b"3,4\n")
    inputs = {"inputs": {"train": "s3://mlscale-test/cache-data/train/", "test": "s3://mlscale-test/cache-data/test/"}}
    first = run_training(tmp_path, "data", "manual__run-1", cache=cache(location), spec=inputs)
    s3.put_object(Bucket="mlscale-test", Key="cache-data/test/a.csv", Body=b"3,5\n")
    changed = run_training(tmp_path, "data", "manual__run-2", cache=cache(location), spec=inputs)
    assert changed["cache"]["hit"] is False and changed["fingerprint"] != first["fingerprint"]
    # the test channel left out of the fingerprint: another change to it is reused
    ignoring = cache(location, ignored_inputs=["test"])
    recorded = run_training(tmp_path, "data", "manual__run-3", cache=ignoring, spec=inputs)
    s3.put_object(Bucket="mlscale-test", Key="cache-data/test/a.csv", Body=b"3,6\n")
    reused = run_training(tmp_path, "data", "manual__run-4", cache=ignoring, spec=inputs)
    assert reused["cache"]["reused"] == recorded["job_name"]
    # a changed training object is not ignored
    s3.put_object(Bucket="mlscale-test", Key="cache-data/train/b.csv", Body=b"7,8\n")
    assert run_training(tmp_path, "data", "manual__run-5", cache=ignoring, spec=inputs)["cache"]["hit"] is False


def test_a_failed_job_is_never_reused(emulator, clients, tmp_path, location):
    for run in ("manual__run-1", "manual__run-2"):
        with pytest.raises(AirflowException, match="out of cheese"):
            run_training(tmp_path, "failing", run, script=FAILING, cache=cache(location))
    assert len(training_jobs(clients, "operator-tests-failing")) == 2


def test_an_expired_entry_or_a_deleted_output_runs_again(emulator, clients, tmp_path, location):
    first = run_training(tmp_path, "expiry", "manual__run-1", cache=cache(location))
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    key = f"{prefix}/training/{first['fingerprint']}.json"
    entry = json.loads(clients["s3"].get_object(Bucket=bucket, Key=key)["Body"].read())
    entry["recorded_at"] = (datetime.now(UTC) - timedelta(days=2)).isoformat()  # as if two days old
    clients["s3"].put_object(Bucket=bucket, Key=key, Body=json.dumps(entry).encode())
    assert run_training(tmp_path, "expiry", "manual__run-2", cache=cache(location, expire_after="P3D"))["cache"]["hit"]
    expired = run_training(tmp_path, "expiry", "manual__run-3", cache=cache(location, expire_after="P1D"))
    assert expired["cache"]["hit"] is False and expired["job_name"] != first["job_name"]
    # the newest success is now the entry; its model deleted, it cannot be reused
    artifact = expired["model_artifact"].removeprefix("s3://mlscale-test/")
    clients["s3"].delete_object(Bucket="mlscale-test", Key=artifact)
    after = run_training(tmp_path, "expiry", "manual__run-4", cache=cache(location))
    assert after["cache"]["hit"] is False and len(training_jobs(clients, "operator-tests-expiry")) == 3


def test_bad_cache_settings_fail_before_any_aws_call_naming_the_field(tmp_path):
    for config, message in (
        (CacheConfig(enabled=True, expire_after="30 days"), "cache.expire_after"),
        (CacheConfig(enabled=True, ignored_inputs=["nope"]), "cache.ignored_inputs: 'nope'"),
        (CacheConfig(enabled="maybe"), "cache.enabled"),
    ):
        operator, context = make_operator(
            tmp_path,
            QUICK,
            "bad-cache",
            deferrable=False,
            cache=config,
            region_name="no-such-region-1",
            aws_conn_id="no_such_connection",
        )
        with pytest.raises(SpecError, match=message):
            operator.execute(context)


def test_deployment_stages_are_never_cached():
    spec = EndpointSpec(
        endpoint_name="never-cached", model_artifact="s3://b/m.tar.gz", role_arn=ROLE_ARN, image_uri="image:1"
    )
    with pytest.raises(ValueError, match="never cached"):
        SageMakerEndpointDeployOperator(task_id="deploy", spec=spec, cache=True)


def test_processing_reuses_across_runs_with_their_own_output_prefixes(emulator, clients, tmp_path, location):
    script = tmp_path / "copy.py"
    script.write_text(COPY)
    clients["s3"].put_object(Bucket="mlscale-test", Key="cache-proc/in/x.txt", Body=b"x")

    def run(run_id: str) -> dict:
        spec = ProcessingSpec(
            script=str(script),
            role_arn=ROLE_ARN,
            image_uri="example/image:1",
            code_location="s3://mlscale-test/cache-proc/code",
            arguments=["--seed", "7"],
            inputs={"data": ProcessingInput("s3://mlscale-test/cache-proc/in/", "/opt/ml/processing/input/data")},
            outputs={
                "out": ProcessingOutput("/opt/ml/processing/output/out", f"s3://mlscale-test/cache-proc/{run_id}/out/")
            },
        )
        op = SageMakerProcessingScriptOperator(
            task_id="proc", spec=spec, poll_interval=0.5, deferrable=False, cache=cache(location)
        )
        return op.execute({"ti": FakeTI("proc", run_id=run_id)})

    first, second = run("run-a"), run("run-b")
    assert second["cache"]["reused"] == first["job_name"]
    assert second["outputs"] == first["outputs"] and "run-a" in second["outputs"]["out"]


def test_etl_query_reuses_its_data_until_a_raw_object_changes(emulator, clients, tmp_path, location):
    import boto3

    from mlscale_example.datasets.raw_digits import generate_day

    for day in ("2026-10-05", "2026-10-06"):
        buffer = io.BytesIO()
        pq.write_table(generate_day(date.fromisoformat(day), 200), buffer)
        clients["s3"].put_object(
            Bucket="mlscale-test", Key=f"cache-raw/dt={day}/part-0.parquet", Body=buffer.getvalue()
        )
    glue = boto3.client("glue", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    ensure_parquet_table(
        glue,
        "cache_test",
        "raw",
        "s3://mlscale-test/cache-raw/",
        {"record_id": "string", "label": "bigint", "pixels": "binary"},
        date_partition="dt",
    )

    def run(run_id: str, columns: str = "record_id, label") -> dict:
        target = f"s3://mlscale-test/cache-etl/{run_id}/"
        spec = AthenaEtlSpec(
            query=f"UNLOAD (SELECT {columns} FROM cache_test.raw WHERE dt = '2026-10-05') TO '{target}' "
            "WITH (format = 'PARQUET')",
            database="cache_test",
            data_prefix=target,
            output_location="s3://mlscale-test/athena-results/",
            inputs={"raw": ["s3://mlscale-test/cache-raw/dt=2026-10-05/"]},
        )
        op = AthenaEtlOperator(task_id="etl", spec=spec, poll_interval=0.2, deferrable=False, cache=cache(location))
        return op.execute({"ti": FakeTI("etl", run_id=run_id)})

    first = run("run-1")
    assert first["objects"] >= 1 and first["data_prefix"].endswith("/run-1/")
    second = run("run-2")
    assert second["cache"]["reused"] == first["query_execution_id"] and second["data_prefix"] == first["data_prefix"]
    # another day of the table changes nothing this query reads
    clients["s3"].put_object(Bucket="mlscale-test", Key="cache-raw/dt=2026-10-06/part-1.parquet", Body=b"")
    assert run("run-3")["cache"]["hit"] is True
    assert run("run-3b", columns="record_id, label, pixels")["cache"]["hit"] is False  # the SQL changed
    clients["s3"].copy_object(
        Bucket="mlscale-test",
        Key="cache-raw/dt=2026-10-05/part-1.parquet",
        CopySource={"Bucket": "mlscale-test", "Key": "cache-raw/dt=2026-10-05/part-0.parquet"},
    )
    changed = run("run-4")
    assert changed["cache"]["hit"] is False and changed["data_prefix"].endswith("/run-4/")


def test_a_retried_etl_try_finds_its_runs_query_and_keeps_its_data(emulator, clients):
    """Athena's ClientRequestToken: a second try of the same task run starts no second query and deletes nothing."""
    target = "s3://mlscale-test/retry-etl/run-1/"

    def attempt() -> dict:
        spec = AthenaEtlSpec(
            query=f"UNLOAD (SELECT 1 AS one) TO '{target}' WITH (format = 'PARQUET')",
            database="default",
            data_prefix=target,
            output_location="s3://mlscale-test/athena-results/",
        )
        op = AthenaEtlOperator(task_id="etl-retry", spec=spec, poll_interval=0.2, deferrable=False)
        return op.execute({"ti": FakeTI("etl-retry", run_id="retry-1")})

    first, again = attempt(), attempt()
    assert again["query_execution_id"] == first["query_execution_id"] and again["objects"] == first["objects"] >= 1
    listed = clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="retry-etl/run-1.attempts/")
    assert [o["Key"] for o in listed["Contents"]] == ["retry-etl/run-1.attempts/1"]
