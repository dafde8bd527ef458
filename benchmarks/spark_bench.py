"""The data step's two engines on the emulator: throughput, peak memory, and Spark past its memory.

- Both engines on the same raw data, a size one sharding instance can hold: Athena (an UNLOAD that
  deduplicates, as sql/etl_digits.sql) then a Processing job running processing/shard.py, against one Glue
  Spark job running spark/etl_shard.py (ETL and shards in one pass). Throughput is raw Parquet MB per second
  from the first request to the last job's end as the service records it; peak memory is the most the jobs
  held at once (their processes, and the emulator's own growth while DuckDB runs Athena's query), sampled
  every 0.2 s, the same way for both.
- Spark past its memory: the Spark job on raw data at least four times its heap; it must finish with equal
  shards. Its throughput and peak memory are printed. Both Spark runs set the heap to MEMORY_MB
  (spark.executor.memory), where Glue would size it from the worker type. 1 GiB, not less: Spark reserves
  300 MiB of any heap and each of the two tasks decodes a whole Parquet row group (a raw day here: ~200 MB of
  pixels); with 512 MiB, 4 of 9 runs of the 2.2 GB job failed (java.lang.OutOfMemoryError, where the log
  was read), more often beside other work.

The two sides run one after the other on one emulator (each is one long job: interleaving cannot help).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from datetime import date, timedelta
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
BUCKET = "spark-bench"
ROLE = "arn:aws:iam::123456789012:role/bench"
MEMORY_MB = 1024
SHARDS = 4
ETL = """UNLOAD (
    SELECT record_id, label, pixels, dt FROM (
        SELECT record_id, label, pixels, dt, row_number() OVER (PARTITION BY record_id ORDER BY dt) AS copy
        FROM bench.{table} WHERE label BETWEEN 0 AND 9 AND pixels IS NOT NULL)
    WHERE copy = 1)
TO 's3://{bucket}/{table}/etl/' WITH (format = 'PARQUET')"""


class PeakMemory:
    """The most this process grew by plus its child processes' memory, sampled until stopped."""

    def __init__(self):
        self.me = psutil.Process()
        self.start_rss = self.me.memory_info().rss
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.wait(0.2):
            total = max(0, self.me.memory_info().rss - self.start_rss)
            for child in self.me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def stage_raw(s3, glue, table: str, target_bytes: int, records_per_day: int) -> tuple[list[str], int]:
    """Raw digits days under s3://BUCKET/<table>/raw/ until they hold target_bytes; the prefixes and bytes."""
    import io

    import pyarrow.parquet as pq

    from mlscale.aws.catalog import ensure_parquet_table
    from mlscale_example.datasets.raw_digits import generate_day

    prefixes, total, day = [], 0, date(2025, 1, 1)
    while total < target_bytes:
        buffer = io.BytesIO()
        pq.write_table(generate_day(day, records_per_day), buffer, compression="zstd")
        key = f"{table}/raw/dt={day}/part-00000.parquet"
        s3.put_object(Bucket=BUCKET, Key=key, Body=buffer.getvalue())
        prefixes.append(f"s3://{BUCKET}/{table}/raw/dt={day}/")
        total += buffer.tell()
        day += timedelta(days=1)
    ensure_parquet_table(
        glue,
        "bench",
        table,
        f"s3://{BUCKET}/{table}/raw/",
        {"record_id": "string", "label": "bigint", "pixels": "binary"},
        date_partition="dt",
    )
    return prefixes, total


def athena_and_processing(clients, table: str) -> float:
    athena, sagemaker = clients["athena"], clients["sagemaker"]
    started = time.time()
    query = athena.start_query_execution(
        QueryString=ETL.format(table=table, bucket=BUCKET),
        ResultConfiguration={"OutputLocation": f"s3://{BUCKET}/athena-results/"},
    )["QueryExecutionId"]
    while (state := athena.get_query_execution(QueryExecutionId=query)["QueryExecution"])["Status"]["State"] in (
        "QUEUED",
        "RUNNING",
    ):
        time.sleep(0.2)
    assert state["Status"]["State"] == "SUCCEEDED", state["Status"]
    name = f"bench-shard-{table}-{int(started)}"

    def channel(kind: str, uri: str, path: str) -> dict:
        return {"InputName": kind, "S3Input": {"S3Uri": uri, "S3DataType": "S3Prefix", "LocalPath": path}}

    outputs = [
        {
            "OutputName": k,
            "S3Output": {"S3Uri": f"s3://{BUCKET}/{table}/athena/{k}/", "LocalPath": p, "S3UploadMode": "EndOfJob"},
        }
        for k, p in (("shards", "/opt/ml/processing/output/shards"), ("test", "/opt/ml/processing/output/test"))
    ]
    sagemaker.create_processing_job(
        ProcessingJobName=name,
        RoleArn=ROLE,
        AppSpecification={
            "ImageUri": "pytorch-training:2",
            "ContainerEntrypoint": ["python3", "/opt/ml/processing/input/code/shard.py"],
            "ContainerArguments": ["--shards", str(SHARDS), "--seed", "1", "--test-fraction", "0.01"],
        },
        ProcessingInputs=[
            channel("code", f"s3://{BUCKET}/code/shard.py", "/opt/ml/processing/input/code"),
            channel("data", f"s3://{BUCKET}/{table}/etl/", "/opt/ml/processing/input/data"),
        ],
        ProcessingOutputConfig={"Outputs": outputs},
        ProcessingResources={
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.xlarge", "VolumeSizeInGB": 30}
        },
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )
    while (job := sagemaker.describe_processing_job(ProcessingJobName=name))["ProcessingJobStatus"] == "InProgress":
        time.sleep(0.2)
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    return job["ProcessingEndTime"].timestamp() - started


def spark(clients, table: str, prefixes: list[str], conf: dict[str, str]) -> tuple[float, dict]:
    """The Glue Spark job over `prefixes`; its seconds (StartJobRun to CompletedOn) and its manifest."""
    glue, s3 = clients["glue"], clients["s3"]
    out = f"s3://{BUCKET}/{table}/spark"
    name = f"bench-{table}"
    glue.create_job(
        Name=name,
        Role=ROLE,
        Command={"Name": "glueetl", "ScriptLocation": f"s3://{BUCKET}/code/etl_shard.py", "PythonVersion": "3"},
        GlueVersion="5.0",
        WorkerType="G.1X",
        NumberOfWorkers=2,
    )
    arguments = {
        "--input": ",".join(prefixes),
        "--etl-output": f"{out}/etl/",
        "--shards-output": f"{out}/shards/",
        "--test-output": f"{out}/test/",
        "--eval-output": f"{out}/eval/",
        "--shards": str(SHARDS),
        "--seed": "1",
        "--test-fraction": "0.01",
        "--extra-py-files": f"s3://{BUCKET}/code/shard.py",
        "--conf": " --conf ".join(f"{k}={v}" for k, v in conf.items()),
    }
    started = time.time()
    run_id = glue.start_job_run(JobName=name, Arguments=arguments)["JobRunId"]
    while (run := glue.get_job_run(JobName=name, RunId=run_id)["JobRun"])["JobRunState"] in ("STARTING", "RUNNING"):
        time.sleep(0.5)
    assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{table}/spark/shards/manifest-spark.json")["Body"].read())
    return run["CompletedOn"].timestamp() - started, manifest


def sizes(quick: bool) -> tuple[int, int]:
    """Raw bytes for the two engines side by side, and for Spark past its heap (four times it, and a little)."""
    return (48 if quick else 256) * 1_000_000, 4 * MEMORY_MB * 1024 * 1024 + 50_000_000


def figures(quick: bool) -> list:
    import tempfile

    import boto3
    from goals import Figure

    from mlscale_emulator.server import EmulatorServer
    from mlscale_emulator.settings import EmulatorSettings

    both_bytes, big_bytes = sizes(quick)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # the emulator's request log
    with tempfile.TemporaryDirectory(prefix="mlscale-spark-bench-") as home:
        server = EmulatorServer(EmulatorSettings(host="127.0.0.1", port=0, home=Path(home))).start()
        try:

            def client(service: str):
                return boto3.client(
                    service,
                    endpoint_url=server.endpoint_url,
                    region_name="us-east-1",
                    aws_access_key_id="testing",
                    aws_secret_access_key="testing",
                )

            clients = {name: client(name) for name in ("s3", "glue", "athena", "sagemaker")}
            clients["s3"].create_bucket(Bucket=BUCKET)
            for script in ("processing/shard.py", "spark/etl_shard.py"):
                clients["s3"].upload_file(str(REPO / "include" / script), BUCKET, f"code/{Path(script).name}")
            both_prefixes, raw = stage_raw(clients["s3"], clients["glue"], "both", both_bytes, 100_000)

            memory = PeakMemory()
            athena_s = athena_and_processing(clients, "both")
            athena_peak = memory.stop()
            memory = PeakMemory()
            conf = {"spark.executor.memory": f"{MEMORY_MB}m", "spark.sql.shuffle.partitions": "16"}
            spark_s, _ = spark(clients, "both", both_prefixes, conf)
            spark_peak = memory.stop()

            big_prefixes, big_raw = stage_raw(clients["s3"], clients["glue"], "big", big_bytes, 250_000)
            memory = PeakMemory()
            conf = {"spark.executor.memory": f"{MEMORY_MB}m", "spark.sql.shuffle.partitions": "64"}
            try:
                big_s, manifest = spark(clients, "big", big_prefixes, conf)
                failure = None
            except AssertionError as error:  # a failed run is a missed goal, not a lost bench
                big_s, manifest, failure = float("inf"), {"shards": [{"records": 0}]}, str(error)[:500]
            big_peak = memory.stop()
        finally:
            # a temporary home: nothing to keep, and saving the emulator's state pickles every S3 object in memory
            # (several times the ~10 GB the runs wrote: the kernel killed the bench for it)
            urllib.request.urlopen(urllib.request.Request(f"{server.endpoint_url}/moto-api/reset", method="POST"))
            server.stop()
    counts = [s["records"] for s in manifest["shards"]]
    equal = max(counts) - min(counts) <= 1
    mb = 1_000_000
    side_by_side = [
        # the data advisor's rule: on data one sharding instance holds, Athena and one Processing job are faster
        Figure(
            "spark_etl_shard_throughput",
            raw / mb / spark_s,
            raw / mb / athena_s,
            "<= 1",
            "MB/s",
            f"{raw / mb:.0f} MB of raw Parquet: one Glue Spark job {spark_s:.1f} s against Athena then Processing "
            f"{athena_s:.1f} s (Spark starts a JVM and passes over the data three times)",
        ),
        Figure(
            "spark_etl_shard_peak_memory",
            spark_peak / mb,
            athena_peak / mb,
            "<= 3",
            "MB",
            f"the same {raw / mb:.0f} MB: the Spark JVM and its Python workers against DuckDB and shard.py",
        ),
    ]
    if failure is not None:
        note = f"{big_raw / mb:.0f} MB with a {MEMORY_MB} MiB heap: the Spark job FAILED: {failure}"
        return [*side_by_side, Figure("spark_beyond_memory_completes", 0, None, ">= 1", "", note)]
    return [
        *side_by_side,
        # past its memory, Spark keeps most of the rate the Athena path has on data that fits
        Figure(
            "spark_beyond_memory_throughput",
            big_raw / mb / big_s,
            raw / mb / athena_s,
            ">= 0.5",
            "MB/s",
            f"{big_raw / mb:.0f} MB with a {MEMORY_MB} MiB heap in {big_s:.1f} s, peak {big_peak / mb:.0f} MB, "
            f"against Athena then Processing on {raw / mb:.0f} MB",
        ),
        Figure(
            "spark_raw_data_per_heap",
            big_raw / (MEMORY_MB * 1024 * 1024),
            None,
            ">= 4",
            "x heap",
            f"{big_raw / mb:.0f} MB of raw Parquet with a {MEMORY_MB} MiB heap: {big_s:.1f} s "
            f"({big_raw / mb / big_s:.1f} MB/s), peak {big_peak / mb:.0f} MB, "
            f"{len(counts)} shards of {min(counts)}-{max(counts)} records ({'equal' if equal else 'NOT equal'})",
        ),
    ] + ([] if equal else [Figure("spark_shards_equal", 0, None, ">= 1", "", "shard counts differ by more than one")])
