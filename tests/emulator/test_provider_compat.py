"""The Amazon provider's own SageMaker hook sees the same emulator behaviour as mlscale's operator."""

import os

import pytest
from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.sdk.exceptions import AirflowException

from tests.conftest import training_request, upload_source

pytestmark = pytest.mark.emulator


def test_provider_hook_waits_for_a_real_job(emulator, clients):
    source = upload_source(clients["s3"], {"train.py": "print('provider ok')"}, "code/provider/sourcedir.tar.gz")
    hook = SageMakerHook(aws_conn_id="aws_default")
    response = hook.create_training_job(
        training_request("provider-ok", source), wait_for_completion=True, print_log=False, check_interval=1
    )
    assert response["TrainingJobArn"].endswith("training-job/provider-ok")
    assert hook.describe_training_job("provider-ok")["TrainingJobStatus"] == "Completed"


def test_provider_hook_reports_the_failure_reason(emulator, clients):
    source = upload_source(
        clients["s3"], {"train.py": "raise SystemExit('no GPU found')"}, "code/provider-fail/sourcedir.tar.gz"
    )
    hook = SageMakerHook(aws_conn_id="aws_default")
    with pytest.raises(AirflowException, match="no GPU found"):
        hook.create_training_job(
            training_request("provider-fail", source), wait_for_completion=True, print_log=False, check_interval=1
        )


def run_provider_trigger(trigger) -> dict:
    """A provider trigger's first event, run as the triggerer runs it (aiobotocore against the emulator)."""
    import asyncio

    async def run():
        async for event in trigger.run():
            return event.payload

    return asyncio.run(run())


def test_the_providers_deferrable_athena_operator(emulator, clients):
    """`[operators] default_deferrable = True` makes the example DAG's `etl` defer like this."""
    from airflow.providers.amazon.aws.operators.athena import AthenaOperator
    from airflow.sdk.exceptions import TaskDeferred

    operator = AthenaOperator(
        task_id="q",
        query="SELECT 1 AS one",
        database="default",
        output_location="s3://mlscale-test/provider-athena/",
        deferrable=True,
        sleep_time=1,
    )
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({})
    event = run_provider_trigger(deferred.value.trigger)
    assert event["status"] == "success"
    query_id = operator.execute_complete({}, event)
    assert clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix=f"provider-athena/{query_id}")["KeyCount"] >= 1


def test_the_providers_deferrable_training_operator(emulator, clients):
    from airflow.providers.amazon.aws.operators.sagemaker import SageMakerTrainingOperator
    from airflow.sdk.exceptions import TaskDeferred

    source = upload_source(clients["s3"], {"train.py": "print('deferred ok')"}, "code/provider-defer/sourcedir.tar.gz")
    operator = SageMakerTrainingOperator(
        task_id="train",
        config=training_request("provider-deferred", source),
        deferrable=True,
        check_interval=1,
        print_log=False,
    )
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": None})
    event = run_provider_trigger(deferred.value.trigger)
    assert event["status"] == "success", event
    result = operator.execute_complete({}, event)
    assert result["Training"]["TrainingJobStatus"] == "Completed"


def test_the_providers_batch_operator_deferred_and_the_aws_cli_on_a_multi_node_job(emulator):
    """The provider's BatchOperator (deferrable, BatchJobTrigger) and the AWS CLI drive the emulator's Batch."""
    import json
    import shutil
    import subprocess
    import uuid

    from airflow.providers.amazon.aws.operators.batch import BatchOperator
    from airflow.sdk.exceptions import TaskDeferred

    from tests.conftest import batch_cluster

    cluster = batch_cluster(
        emulator.endpoint_url,
        f"provider-{uuid.uuid4().hex[:6]}",
        4,
        ["python", "-c", "import os; print('node', os.environ['AWS_BATCH_JOB_NODE_INDEX'])"],
    )
    operator = BatchOperator(
        task_id="provider_batch",
        job_name="provider-mnp",
        job_queue=cluster["queue"],
        job_definition=cluster["definition"],
        deferrable=True,
        poll_interval=1,
        node_overrides={"numNodes": 2},
    )
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": None})
    event = run_provider_trigger(deferred.value.trigger)
    assert event["status"] == "success", event
    job_id = operator.execute_complete({}, event)
    job = cluster["batch"].describe_jobs(jobs=[job_id])["jobs"][0]
    assert job["status"] == "SUCCEEDED" and job["nodeProperties"]["numNodes"] == 2

    if shutil.which("aws"):
        cli = subprocess.run(
            [
                "aws",
                "batch",
                "describe-jobs",
                "--jobs",
                f"{job_id}#1",
                "--endpoint-url",
                emulator.endpoint_url,
                "--region",
                "us-east-1",
                "--output",
                "json",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"},
        )
        assert cli.returncode == 0, cli.stderr
        node = json.loads(cli.stdout)["jobs"][0]
        assert node["nodeDetails"] == {"nodeIndex": 1, "isMainNode": False} and node["container"]["exitCode"] == 0
