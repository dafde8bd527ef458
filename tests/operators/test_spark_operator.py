"""GlueSparkJobOperator running include/spark/etl_shard.py on the emulator's Glue: ETL and equal shards in one
Spark job, the same manifest and record format as the Processing shard script; reattach, cache, bad input."""

from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlscale.operators import GlueSparkJobOperator
from mlscale.specs import CacheConfig, GlueSparkSpec, SpecError
from tests.conftest import ROLE_ARN
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator

INCLUDE = Path(__file__).resolve().parents[2] / "include"
RAW = "s3://mlscale-test/spark-raw/digits"
OUT = "s3://mlscale-test/spark-run"


def spec(**changes) -> GlueSparkSpec:
    fields = dict(
        job_name="mlscale-etl-shard-test",
        script=str(INCLUDE / "spark" / "etl_shard.py"),
        extra_py_files=[str(INCLUDE / "processing" / "shard.py")],
        role_arn=ROLE_ARN,
        code_location="s3://mlscale-test/spark-code",
        arguments={
            "--input": f"{RAW}/dt=2026-11-01/,{RAW}/dt=2026-11-02/",
            "--etl-output": f"{OUT}/etl/",
            "--shards-output": f"{OUT}/shards/train/",
            "--test-output": f"{OUT}/shards/test/",
            "--eval-output": f"{OUT}/eval/",
            "--shards": "3",
            "--seed": "7",
            "--test-fraction": "0.1",
        },
        inputs={"raw": [f"{RAW}/dt=2026-11-01/", f"{RAW}/dt=2026-11-02/"]},
        outputs={"shards": f"{OUT}/shards/train/", "test": f"{OUT}/shards/test/", "etl": f"{OUT}/etl/"},
        spark_conf={"spark.sql.shuffle.partitions": "4"},
    )
    fields.update(changes)
    return GlueSparkSpec(**fields)


@pytest.fixture(scope="module")
def raw_days(clients):
    """Two days of raw digits; the second repeats 50 of the first day's records and has 7 invalid labels."""
    from mlscale_example.datasets.raw_digits import generate_day

    first = generate_day(date(2026, 11, 1), 300)
    second = generate_day(date(2026, 11, 2), 200)
    labels = second.column("label").to_numpy().copy()
    labels[:7] = 11
    second = second.set_column(1, "label", pa.array(labels))
    second = pa.concat_tables([second, first.slice(0, 50)])
    for day, table in (("2026-11-01", first), ("2026-11-02", second)):
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        clients["s3"].put_object(
            Bucket="mlscale-test", Key=f"spark-raw/digits/dt={day}/part-00000.parquet", Body=buffer.getvalue()
        )
    return 300 + 200 - 7  # unique, valid records


def read(clients, uri: str) -> bytes:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return clients["s3"].get_object(Bucket=bucket, Key=key)["Body"].read()


CACHE = "s3://mlscale-test/spark-cache"


@pytest.fixture(scope="module")
def first_run(raw_days):
    """One run of the stage, with the cache on (the cache test reuses it)."""
    operator = GlueSparkJobOperator(
        task_id="spark", spec=spec(), deferrable=False, poll_interval=1, cache=CacheConfig(enabled=True, location=CACHE)
    )
    return operator, operator.execute({"ti": FakeTI("spark")})


def test_one_spark_job_writes_the_etl_output_and_equal_shards(first_run, raw_days, clients, tmp_path):
    operator, result = first_run
    assert result["state"] == "SUCCEEDED" and result["shards_uri"] == f"{OUT}/shards/train/"
    manifest = json.loads(read(clients, f"{OUT}/shards/train/manifest-spark.json"))
    counts = [s["records"] for s in manifest["shards"]]
    assert len(counts) == 3 and max(counts) - min(counts) <= 1
    assert manifest["records"] + manifest["test_records"] == raw_days and manifest["test_records"] == raw_days // 10
    # the files are what the manifest says, in shard.py's record format, records resized to 8x8
    import hashlib
    import sys

    sys.path.insert(0, str(INCLUDE / "training"))
    from shard_loader import read_header

    labels = []
    for entry in [*manifest["shards"], manifest["test"]]:
        folder = "test" if entry["file"].startswith("test-") else "train"
        body = read(clients, f"{OUT}/shards/{folder}/{entry['file']}")
        assert len(body) == entry["bytes"] and hashlib.sha256(body).hexdigest() == entry["sha256"]
        path = tmp_path / entry["file"]
        path.write_bytes(body)
        count, dtype, offset = read_header(str(path))
        records = np.frombuffer(body[offset:], dtype=dtype)
        assert dtype["pixels"].shape == (8, 8) and count == entry["records"] == len(records)
        labels += records["label"].tolist()
    assert set(labels) <= set(range(10)) and len(labels) == raw_days
    features = read(clients, f"{OUT}/eval/features/features-spark.csv").decode().splitlines()
    assert len(features) == manifest["test_records"] and len(features[0].split(",")) == 64
    etl = clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="spark-run/etl/")["Contents"]
    assert any(o["Key"].endswith(".parquet") for o in etl)

    # a retried try of the same task run finds the run that succeeded: nothing starts again
    glue = operator.hook.conn
    before = len(glue.get_job_runs(JobName="mlscale-etl-shard-test")["JobRuns"])
    again = GlueSparkJobOperator(task_id="spark", spec=spec(), deferrable=False, poll_interval=1)
    assert again.execute({"ti": FakeTI("spark")})["job_run_id"] == result["job_run_id"]
    assert len(glue.get_job_runs(JobName="mlscale-etl-shard-test")["JobRuns"]) == before


def test_the_cache_reuses_a_spark_run_for_the_same_data(first_run):
    _, first = first_run
    second = GlueSparkJobOperator(
        task_id="spark", spec=spec(), deferrable=False, poll_interval=1, cache=CacheConfig(enabled=True, location=CACHE)
    )
    with mock.patch.object(GlueSparkJobOperator, "_start", side_effect=AssertionError("started a run")):
        reused = second.execute({"ti": FakeTI("spark", run_id="another-run")})
    assert reused["cache"]["hit"] and reused["job_run_id"] == first["job_run_id"]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"worker_type": "G.025X"}, "worker_type"),
        ({"number_of_workers": 1}, "number_of_workers"),
        ({"number_of_workers": 300}, "number_of_workers"),
        ({"script": "/nowhere/etl.py"}, "script"),
        ({"outputs": {"shards": "s3://Bad_Bucket/x/"}}, "outputs['shards']"),
        ({"arguments": {"--conf": "spark.x=1"}}, "arguments['--conf']"),
        ({"spark_conf": {"executor.memory": "2g"}}, "spark_conf['executor.memory']"),
        ({"glue_version": "2.0"}, "glue_version"),
    ],
)
def test_bad_input_is_refused_before_any_aws_call(changes, field):
    operator = GlueSparkJobOperator(task_id="spark", spec=spec(**changes), deferrable=False)
    with mock.patch.object(GlueSparkJobOperator, "hook", new_callable=mock.PropertyMock) as hook:
        with pytest.raises(SpecError) as error:
            operator.execute({"ti": FakeTI("spark")})
    assert error.value.field == field
    hook.assert_not_called()


def test_a_retried_try_waits_on_the_run_its_task_run_started_and_a_kill_stops_it():
    from mlscale.operators.spark import TASK_ARGUMENT
    from mlscale.operators.stage import Wait
    from mlscale.waits.kinds import GLUE_JOB_RUN

    glue = mock.MagicMock()
    key = "operator_tests/spark/manual__2026-12-01T00:00:00+00:00/-1"
    glue.get_job_runs.return_value = {
        "JobRuns": [
            {"Id": "jr_old", "JobRunState": "FAILED", "StartedOn": 1, "Arguments": {TASK_ARGUMENT: key}},
            {"Id": "jr_mine", "JobRunState": "RUNNING", "StartedOn": 2, "Arguments": {TASK_ARGUMENT: key}},
            {"Id": "jr_other", "JobRunState": "RUNNING", "StartedOn": 3, "Arguments": {TASK_ARGUMENT: "other"}},
        ]
    }
    operator = GlueSparkJobOperator(task_id="spark", spec=spec(), deferrable=False)
    with mock.patch.object(GlueSparkJobOperator, "hook", new_callable=mock.PropertyMock) as hook:
        hook.return_value.conn = glue
        with mock.patch.object(GlueSparkJobOperator, "_link"):
            wait = operator.advance({"ti": FakeTI("spark")}, None)
        assert wait == Wait(GLUE_JOB_RUN, "mlscale-etl-shard-test/jr_mine")
        glue.start_job_run.assert_not_called()
        # submit-then-sense: what the provider's GlueJobSensor(job_name=, run_id=) takes
        submitted = operator.submitted({}, wait)
        assert (submitted["job_name"], submitted["job_run_id"]) == ("mlscale-etl-shard-test", "jr_mine")
        operator._waiting = wait
        operator.on_kill()
    glue.batch_stop_job_run.assert_called_once_with(JobName="mlscale-etl-shard-test", JobRunIds=["jr_mine"])


def test_both_engines_write_the_same_shards_from_the_same_records(first_run, clients, tmp_path):
    """processing/shard.py on the Spark job's ETL output holds out the same records and writes byte-identical
    shards: the two engines differ in how they run, not in the data training sees."""
    import subprocess
    import sys

    data = tmp_path / "etl"
    data.mkdir()
    for item in clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="spark-run/etl/")["Contents"]:
        if item["Key"].endswith(".parquet"):
            (data / item["Key"].rsplit("/", 1)[-1]).write_bytes(read(clients, f"s3://mlscale-test/{item['Key']}"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "resourceconfig.json").write_text(json.dumps({"current_host": "algo-1"}))
    arguments = ["--shards", "3", "--seed", "7", "--test-fraction", "0.1"]
    folders = ["--input-dir", str(data), "--output-dir", str(tmp_path / "shards"), "--test-dir", str(tmp_path / "test")]
    done = subprocess.run(
        [sys.executable, str(INCLUDE / "processing" / "shard.py"), *folders, *arguments, "--eval-dir", str(tmp_path)],
        env={"SAGEMAKER_PROCESSING_ROOT": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    processing = json.loads((tmp_path / "shards" / "manifest-algo-1.json").read_text())
    spark = json.loads(read(clients, f"{OUT}/shards/train/manifest-spark.json"))
    assert [s["sha256"] for s in processing["shards"]] == [s["sha256"] for s in spark["shards"]]
    assert processing["test"]["sha256"] == spark["test"]["sha256"]
