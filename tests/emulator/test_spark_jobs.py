"""Glue Spark (glueetl) and EMR Serverless job runs run their PySpark script on Apache Spark against the
emulator's S3, with each service's states, logs, stop/cancel and failure reasons; the Amazon provider's own
operators (deferrable) and sensors drive them unchanged."""

from __future__ import annotations

import gzip
import time

import boto3
import pytest

pytestmark = pytest.mark.emulator

ROLE = "arn:aws:iam::123456789012:role/spark"
# A plain PySpark script: s3:// and s3a:// paths, a write that commits by renaming, a read back, --conf seen.
SCRIPT = """
import sys
from pyspark.sql import SparkSession

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
if args.get("--fail") == "yes":  # the driver fails before it starts Spark: the cheapest failing run
    raise ValueError("no rows for " + args["--day"])
if args.get("--sleep"):  # a run to stop: spark-submit's JVM and the driver, no Spark work
    print("started", flush=True)
    import time; time.sleep(float(args["--sleep"]))
spark = SparkSession.builder.getOrCreate()
print("partitions", spark.conf.get("spark.sql.shuffle.partitions"))
print("cores", spark.sparkContext.defaultParallelism)
days = spark.read.text(args["--input"].replace("s3://", "s3a://"))
print("lines", days.count())
counts = days.groupBy("value").count()
counts.write.mode("overwrite").parquet(args["--output"])
back = spark.read.parquet(args["--output"])
print("distinct", back.count(), "total", back.groupBy().sum("count").first()[0])
"""


def client(emulator, service):
    return boto3.client(service, endpoint_url=emulator.endpoint_url, region_name="us-east-1")


def wait_glue(glue, name, run_id, states=("STARTING", "RUNNING", "STOPPING"), timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = glue.get_job_run(JobName=name, RunId=run_id)["JobRun"]
        if run["JobRunState"] not in states:
            return run
        time.sleep(0.3)
    raise TimeoutError(run_id)


def log_lines(logs, group, stream):
    return [e["message"] for e in logs.get_log_events(logGroupName=group, logStreamName=stream)["events"]]


@pytest.fixture(scope="module")
def glue_runs(emulator, clients):
    """Three runs of one glueetl job started together (Spark starts a JVM each: they overlap)."""
    s3 = clients["s3"]
    s3.put_object(Bucket="mlscale-test", Key="spark/scripts/job.py", Body=SCRIPT.encode())
    s3.put_object(Bucket="mlscale-test", Key="spark/in/day.txt", Body=b"a\nb\na\nc\na\n")
    glue = client(emulator, "glue")
    glue.create_job(
        Name="spark-etl",
        Role=ROLE,
        Command={"Name": "glueetl", "ScriptLocation": "s3://mlscale-test/spark/scripts/job.py", "PythonVersion": "3"},
        GlueVersion="5.0",
        WorkerType="G.1X",
        NumberOfWorkers=2,
        DefaultArguments={"--input": "s3://mlscale-test/spark/in/day.txt", "--day": "2026-11-01"},
        ExecutionProperty={"MaxConcurrentRuns": 3},
    )
    start = glue.start_job_run
    return glue, {
        "ok": start(
            JobName="spark-etl",
            Arguments={"--output": "s3://mlscale-test/spark/out/counts", "--conf": "spark.sql.shuffle.partitions=3"},
        )["JobRunId"],
        "fail": start(JobName="spark-etl", Arguments={"--fail": "yes"})["JobRunId"],
        "stop": start(JobName="spark-etl", Arguments={"--sleep": "600"})["JobRunId"],
    }


def test_a_glue_spark_run_reads_and_writes_the_emulators_s3(glue_runs, clients, emulator):
    glue, runs = glue_runs
    run = wait_glue(glue, "spark-etl", runs["ok"])
    assert run["JobRunState"] == "SUCCEEDED", run.get("ErrorMessage")
    assert run["LogGroupName"] == "/aws-glue/jobs" and run["WorkerType"] == "G.1X" and run["NumberOfWorkers"] == 2
    output = log_lines(client(emulator, "logs"), "/aws-glue/jobs/output", runs["ok"])
    assert "partitions 3" in output  # --conf reached Spark
    assert "lines 5" in output and "distinct 3 total 5" in output
    keys = [o["Key"] for o in clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="spark/")["Contents"]]
    written = [k for k in keys if k.startswith("spark/out/counts/")]
    assert "spark/out/counts/_SUCCESS" in written and any(k.endswith(".parquet") for k in written)
    # the committer's _temporary files were renamed into place and no directory marker is left behind
    assert not [k for k in keys if "_temporary" in k or k.endswith("/")]


def test_a_failed_spark_run_names_the_drivers_exception(glue_runs, emulator):
    glue, runs = glue_runs
    run = wait_glue(glue, "spark-etl", runs["fail"])
    assert run["JobRunState"] == "FAILED"
    assert run["ErrorMessage"].startswith("ValueError: no rows for 2026-11-01"), run["ErrorMessage"]
    assert "Traceback (most recent call last):" in run["ErrorMessage"]  # with the last lines of the output
    # Spark's PythonRunner merges the driver script's stderr into its stdout: the traceback is in the output log
    output = log_lines(client(emulator, "logs"), "/aws-glue/jobs/output", runs["fail"])
    assert "ValueError: no rows for 2026-11-01" in output


def test_batch_stop_job_run_stops_a_spark_run(glue_runs, emulator):
    glue, runs = glue_runs
    logs = client(emulator, "logs")
    deadline = time.monotonic() + 240
    while "started" not in _safe_lines(logs, runs["stop"]):
        assert time.monotonic() < deadline, "the run never started its script"
        time.sleep(0.5)
    answer = glue.batch_stop_job_run(JobName="spark-etl", JobRunIds=[runs["stop"], "jr_missing"])
    assert answer["SuccessfulSubmissions"] == [{"JobName": "spark-etl", "JobRunId": runs["stop"]}]
    assert answer["Errors"][0]["JobRunId"] == "jr_missing"
    assert answer["Errors"][0]["ErrorDetail"]["ErrorCode"] == "EntityNotFoundException"
    assert glue.get_job_run(JobName="spark-etl", RunId=runs["stop"])["JobRun"]["JobRunState"] in ("STOPPING", "STOPPED")
    assert wait_glue(glue, "spark-etl", runs["stop"], timeout=60)["JobRunState"] == "STOPPED"
    again = glue.batch_stop_job_run(JobName="spark-etl", JobRunIds=[runs["stop"]])
    assert again["Errors"][0]["ErrorDetail"]["ErrorCode"] == "InvalidInputException"


def _safe_lines(logs, stream):
    try:
        return log_lines(logs, "/aws-glue/jobs/output", stream)
    except logs.exceptions.ResourceNotFoundException:
        return []


def test_the_providers_glue_and_emr_serverless_operators_deferred(emulator, clients):
    """GlueJobOperator and EmrServerlessStartJobOperator, deferrable, as a DAG author writes them: their triggers
    run as the triggerer runs them (aiobotocore against the emulator)."""
    from airflow.providers.amazon.aws.operators.emr import (
        EmrServerlessCreateApplicationOperator,
        EmrServerlessStartJobOperator,
    )
    from airflow.providers.amazon.aws.operators.glue import GlueJobOperator
    from airflow.providers.amazon.aws.sensors.emr import EmrServerlessJobSensor
    from airflow.providers.amazon.aws.sensors.glue import GlueJobSensor
    from airflow.sdk.exceptions import TaskDeferred

    from tests.emulator.test_provider_compat import run_provider_trigger

    s3 = clients["s3"]
    s3.put_object(Bucket="mlscale-test", Key="spark/in/provider.txt", Body=b"x\ny\nx\n")
    clients["s3"].put_object(Bucket="mlscale-test", Key="spark/scripts/job.py", Body=SCRIPT.encode())
    glue_op = GlueJobOperator(
        task_id="glue",
        job_name="provider-spark",
        script_location="s3://mlscale-test/spark/scripts/job.py",
        iam_role_arn=ROLE,
        create_job_kwargs={"GlueVersion": "5.0", "WorkerType": "G.1X", "NumberOfWorkers": 2},
        script_args={"--input": "s3://mlscale-test/spark/in/provider.txt", "--output": "s3://mlscale-test/spark/out/g"},
        deferrable=True,
        waiter_delay=1,
    )
    with pytest.raises(TaskDeferred) as glue_deferred:
        glue_op.execute(_context())

    app = EmrServerlessCreateApplicationOperator(
        task_id="app", release_label="emr-7.9.0", job_type="SPARK", config={"name": "mlscale"}, waiter_delay=1
    ).execute(_context())
    emr_op = EmrServerlessStartJobOperator(
        task_id="emr",
        application_id=app,
        execution_role_arn=ROLE,
        job_driver={
            "sparkSubmit": {
                "entryPoint": "s3://mlscale-test/spark/scripts/job.py",
                "entryPointArguments": [
                    "--input",
                    "s3://mlscale-test/spark/in/provider.txt",
                    "--output",
                    "s3://mlscale-test/spark/out/e",
                ],
                "sparkSubmitParameters": "--conf spark.sql.shuffle.partitions=2 --executor-memory 1g",
            }
        },
        configuration_overrides={
            "monitoringConfiguration": {"s3MonitoringConfiguration": {"logUri": "s3://mlscale-test/spark/emr-logs/"}}
        },
        deferrable=True,
        waiter_delay=1,
    )
    with pytest.raises(TaskDeferred) as emr_deferred:
        emr_op.execute(_context())

    glue_event = run_provider_trigger(glue_deferred.value.trigger)
    assert glue_event["status"] == "success", glue_event
    glue_run = glue_op.execute_complete({}, glue_event)
    assert glue_run.startswith("jr_")
    emr_event = run_provider_trigger(emr_deferred.value.trigger)
    assert emr_event["status"] == "success", emr_event
    run_id = emr_op.execute_complete({}, emr_event)
    emr = client(emulator, "emr-serverless")
    run = emr.get_job_run(applicationId=app, jobRunId=run_id)["jobRun"]
    assert run["state"] == "SUCCESS" and run["totalExecutionDurationSeconds"] >= 0
    # and the provider's sensors see both runs succeeded
    assert GlueJobSensor(task_id="glue_done", job_name="provider-spark", run_id=glue_run).poke({})
    assert EmrServerlessJobSensor(task_id="emr_done", application_id=app, job_run_id=run_id).poke({})
    for prefix in ("spark/out/g/", "spark/out/e/"):
        assert clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix=prefix + "_SUCCESS")["KeyCount"] == 1
    log_key = f"spark/emr-logs/applications/{app}/jobs/{run_id}/SPARK_DRIVER/stdout.gz"
    stdout = gzip.decompress(s3.get_object(Bucket="mlscale-test", Key=log_key)["Body"].read()).decode()
    assert "partitions 2" in stdout and "distinct 2 total 3" in stdout

    # CancelJobRun: CANCELLING, then CANCELLED once the driver has ended; a bad parameter fails the run
    driver = {"sparkSubmit": {"entryPoint": "s3://mlscale-test/spark/scripts/job.py"}}
    slow = {"sparkSubmit": {**driver["sparkSubmit"], "entryPointArguments": ["--sleep", "600", "--input", "s3://x/y"]}}

    def start(job_driver, token):
        return emr.start_job_run(applicationId=app, executionRoleArn=ROLE, jobDriver=job_driver, clientToken=token)

    cancelled = start(slow, "c1")["jobRunId"]
    assert start(slow, "c1")["jobRunId"] == cancelled  # idempotent on clientToken
    emr.cancel_job_run(applicationId=app, jobRunId=cancelled)
    assert emr.get_job_run(applicationId=app, jobRunId=cancelled)["jobRun"]["state"] in ("CANCELLING", "CANCELLED")
    bad = {"sparkSubmit": {**driver["sparkSubmit"], "sparkSubmitParameters": "--deploy-mode cluster"}}
    failed = start(bad, "c2")["jobRunId"]
    assert _wait_emr(emr, app, cancelled)["state"] == "CANCELLED"
    failure = _wait_emr(emr, app, failed)
    assert failure["state"] == "FAILED" and "--deploy-mode is not supported" in failure["stateDetails"]


def _wait_emr(emr, app, run_id, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = emr.get_job_run(applicationId=app, jobRunId=run_id)["jobRun"]
        if run["state"] in ("SUCCESS", "FAILED", "CANCELLED"):
            return run
        time.sleep(0.3)
    raise TimeoutError(run_id)


def _context():
    from unittest import mock

    ti = mock.MagicMock(dag_id="d", task_id="t", run_id="r", map_index=-1, try_number=1)
    ti.xcom_pull.return_value = None
    return {"ti": ti}


def test_update_job_replaces_the_definition(glue_runs):
    """UpdateJob overwrites the whole definition (what it leaves out is unset), as Glue documents it."""
    glue, _ = glue_runs
    command = {"Name": "glueetl", "ScriptLocation": "s3://mlscale-test/spark/scripts/v2.py", "PythonVersion": "3"}
    glue.create_job(Name="spark-update", Role=ROLE, Command=command, DefaultArguments={"--day": "1"})
    glue.update_job(
        JobName="spark-update",
        JobUpdate={"Role": ROLE, "Command": command, "WorkerType": "G.2X", "NumberOfWorkers": 3, "Timeout": 30},
    )
    job = glue.get_job(JobName="spark-update")["Job"]
    assert (job["WorkerType"], job["NumberOfWorkers"], job["Timeout"]) == ("G.2X", 3, 30)
    assert not job.get("DefaultArguments")
    with pytest.raises(glue.exceptions.EntityNotFoundException):
        glue.update_job(JobName="no-such-job", JobUpdate={"Role": ROLE, "Command": command})


def test_a_script_location_that_leaves_the_runs_folder_fails_the_run(glue_runs):
    """A hostile ScriptLocation ("..") is never a path outside the run's own folder."""
    glue, _ = glue_runs
    command = {"Name": "glueetl", "ScriptLocation": "s3://mlscale-test/spark/.."}
    glue.create_job(Name="spark-escape", Role=ROLE, Command=command)
    run = wait_glue(glue, "spark-escape", glue.start_job_run(JobName="spark-escape")["JobRunId"])
    assert run["JobRunState"] == "FAILED" and "leaves its channel directory" in run["ErrorMessage"]
