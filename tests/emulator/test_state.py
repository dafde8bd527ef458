"""The emulator keeps its state across down/up, per account and region, until `mlscale emulator reset`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
import torch

from tests.conftest import batch_cluster, free_port, model_tar, training_request, upload_source

pytestmark = pytest.mark.emulator
SLEEPER = "import time\nprint('training', flush=True)\ntime.sleep(600)\n"


def mlscale(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "mlscale_emulator.cli", *args], env=env, capture_output=True, text=True, timeout=180
    )


def wait_until(check, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = check()
        if answer:
            return answer
        time.sleep(0.3)
    raise TimeoutError(check)


def serving_processes(home: str) -> list[int]:
    """The model servers (mlscale_emulator.serving) still running for the emulator at `home`."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if "mlscale_emulator.serving" in command and home in command:
            found.append(process.info["pid"])
    return found


@pytest.fixture
def own_emulator(tmp_path):
    """An emulator of this test's own (the session's must not restart)."""
    env = {**os.environ, "MLSCALE_EMULATOR_PORT": str(free_port()), "MLSCALE_EMULATOR_HOME": str(tmp_path)}
    assert mlscale("emulator", "up", env=env).returncode == 0
    url = f"http://127.0.0.1:{env['MLSCALE_EMULATOR_PORT']}"

    def client(service, region="us-east-1"):
        return boto3.client(service, endpoint_url=url, region_name=region)

    yield env, client
    mlscale("emulator", "down", env=env)


def linear_model() -> bytes:
    layer = torch.nn.Linear(2, 1, bias=False)
    layer.weight.data = torch.tensor([[1.0, 2.0]])
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(layer), buffer)
    return model_tar({"model.pt": buffer.getvalue()})


def test_state_survives_down_and_up_and_reset_wipes_it(own_emulator):
    env, client = own_emulator
    s3, sagemaker, logs = client("s3"), client("sagemaker"), client("logs")
    s3.create_bucket(Bucket="mlscale-test")
    s3.put_object(Bucket="mlscale-test", Key="kept/object.txt", Body=b"still here")
    s3.put_object(Bucket="mlscale-test", Key="models/linear.tar.gz", Body=linear_model())
    sagemaker.create_model_package_group(ModelPackageGroupName="kept-group")
    sagemaker.create_model(
        ModelName="linear",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
        PrimaryContainer={"Image": "pytorch-inference:2", "ModelDataUrl": "s3://mlscale-test/models/linear.tar.gz"},
    )
    sagemaker.create_endpoint_config(
        EndpointConfigName="linear",
        ProductionVariants=[
            {
                "VariantName": "AllTraffic",
                "ModelName": "linear",
                "InitialInstanceCount": 1,
                "InstanceType": "ml.m5.large",
            }
        ],
    )
    sagemaker.create_endpoint(EndpointName="kept", EndpointConfigName="linear")
    source = upload_source(s3, {"train.py": SLEEPER}, "src/sleeper.tar.gz")
    sagemaker.create_training_job(**training_request("cut-short", source))
    wait_until(lambda: sagemaker.describe_training_job(TrainingJobName="cut-short")["SecondaryStatus"] == "Training")
    wait_until(lambda: sagemaker.describe_endpoint(EndpointName="kept")["EndpointStatus"] == "InService")
    fsx = client("fsx")
    file_system = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
    )["FileSystem"]
    wait_until(
        lambda: (
            fsx.describe_file_systems(FileSystemIds=[file_system["FileSystemId"]])["FileSystems"][0]["Lifecycle"]
            == "AVAILABLE"
        )
    )
    association = fsx.create_data_repository_association(
        FileSystemId=file_system["FileSystemId"], FileSystemPath="/kept", DataRepositoryPath="s3://mlscale-test/kept/"
    )["Association"]

    sqs = client("sqs")  # moto's queues hold a lock: it must not stop the state from being saved
    queue = sqs.create_queue(QueueName="kept-queue")["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody="kept")
    ssm = client("ssm")  # and moto's SSM keeps its tags in a defaultdict of a lambda
    ssm.put_parameter(Name="/mlscale/kept", Value="v1", Type="String", Tags=[{"Key": "team", "Value": "ml"}])

    cluster = batch_cluster(
        f"http://127.0.0.1:{env['MLSCALE_EMULATOR_PORT']}", "kept-cluster", 4, ["python", "-c", "print('done')"]
    )  # moto's Batch jobs are threads: saved without them
    batch = cluster["batch"]
    finished = batch.submit_job(jobName="finished", jobQueue=cluster["queue"], jobDefinition=cluster["definition"])[
        "jobId"
    ]
    wait_until(lambda: batch.describe_jobs(jobs=[finished])["jobs"][0]["status"] == "SUCCEEDED")
    cut = batch.submit_job(
        jobName="cut-short",
        jobQueue=cluster["queue"],
        jobDefinition=cluster["definition"],
        nodeOverrides={
            "nodePropertyOverrides": [
                {
                    "targetNodes": "0:",
                    "containerOverrides": {"command": ["python", "-c", "import time; time.sleep(600)"]},
                }
            ]
        },
    )["jobId"]
    wait_until(lambda: batch.describe_jobs(jobs=[cut])["jobs"][0]["status"] == "RUNNING")
    # a Glue Spark run and an EMR Serverless run, each a spark-submit whose driver sleeps
    s3.put_object(Bucket="mlscale-test", Key="spark/sleep.py", Body=SLEEPER.encode())
    glue = client("glue")
    command = {"Name": "glueetl", "ScriptLocation": "s3://mlscale-test/spark/sleep.py"}
    glue.create_job(Name="cut-short", Role="arn:aws:iam::123456789012:role/x", Command=command)
    glue_run = glue.start_job_run(JobName="cut-short")["JobRunId"]
    emr = client("emr-serverless")
    app = emr.create_application(name="kept", releaseLabel="emr-7.9.0", type="SPARK")["applicationId"]
    driver = {"sparkSubmit": {"entryPoint": "s3://mlscale-test/spark/sleep.py"}}
    emr_run = emr.start_job_run(
        applicationId=app, executionRoleArn="arn:aws:iam::123456789012:role/x", jobDriver=driver
    )
    wait_until(lambda: emr.get_job_run(applicationId=app, jobRunId=emr_run["jobRunId"])["jobRun"]["state"] == "RUNNING")

    started = time.monotonic()
    assert "stopped" in mlscale("emulator", "down", env=env).stdout
    down_seconds = time.monotonic() - started
    assert down_seconds < 20, f"down took {down_seconds:.1f} s with a job running"
    assert mlscale("emulator", "up", env=env).returncode == 0

    assert s3.get_object(Bucket="mlscale-test", Key="kept/object.txt")["Body"].read() == b"still here"
    assert sagemaker.describe_model_package_group(ModelPackageGroupName="kept-group")["ModelPackageGroupName"]
    job = sagemaker.describe_training_job(TrainingJobName="cut-short")
    assert job["TrainingJobStatus"] == "Failed" and "emulator stopped while this ran" in job["FailureReason"]
    streams = logs.describe_log_streams(logGroupName="/aws/sagemaker/TrainingJobs")["logStreams"]
    assert any(s["logStreamName"].startswith("cut-short/") for s in streams)  # its logs are kept too
    assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"][0]["Body"] == "kept"
    finished_job, cut_job, main_node = batch.describe_jobs(jobs=[finished, cut, f"{finished}#0"])["jobs"]
    assert finished_job["status"] == "SUCCEEDED" and main_node["container"]["exitCode"] == 0
    assert cut_job["status"] == "FAILED" and "emulator stopped while this ran" in cut_job["statusReason"]
    glue_after = glue.get_job_run(JobName="cut-short", RunId=glue_run)["JobRun"]
    assert glue_after["JobRunState"] == "FAILED" and "emulator stopped while this ran" in glue_after["ErrorMessage"]
    emr_after = emr.get_job_run(applicationId=app, jobRunId=emr_run["jobRunId"])["jobRun"]
    assert emr_after["state"] == "FAILED" and "emulator stopped while this ran" in emr_after["stateDetails"]
    assert ssm.get_parameter(Name="/mlscale/kept")["Parameter"]["Value"] == "v1"
    ssm.add_tags_to_resource(ResourceType="Parameter", ResourceId="/mlscale/kept", Tags=[{"Key": "k", "Value": "v"}])
    assert {
        t["Key"] for t in ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId="/mlscale/kept")["TagList"]
    } == {"team", "k"}
    described = fsx.describe_data_repository_associations(AssociationIds=[association["AssociationId"]])
    assert described["Associations"][0]["FileSystemPath"] == "/kept"
    # the endpoint's model servers come back: SystemUpdating until they answer, then InService and answering
    assert (
        wait_until(
            lambda: (
                sagemaker.describe_endpoint(EndpointName="kept")["EndpointStatus"] != "SystemUpdating"
                and sagemaker.describe_endpoint(EndpointName="kept")["EndpointStatus"]
            )
        )
        == "InService"
    )
    answer = client("sagemaker-runtime").invoke_endpoint(
        EndpointName="kept", Body="[[1, 1]]", ContentType="application/json"
    )
    assert json.loads(answer["Body"].read()) == [[3.0]]

    # stopped again at once, while its model servers come back: none outlives the emulator
    from mlscale_emulator import control
    from mlscale_emulator.settings import EmulatorSettings

    mlscale("emulator", "down", env=env)
    config = EmulatorSettings(
        host="127.0.0.1", port=int(env["MLSCALE_EMULATOR_PORT"]), home=Path(env["MLSCALE_EMULATOR_HOME"])
    )
    control.up(config)
    control.down(config)
    assert wait_until(lambda: not serving_processes(env["MLSCALE_EMULATOR_HOME"])), serving_processes(
        env["MLSCALE_EMULATOR_HOME"]
    )
    assert mlscale("emulator", "up", env=env).returncode == 0

    reset = mlscale("emulator", "reset", env=env)
    assert reset.returncode == 0 and "reset (running" in reset.stdout
    assert s3.list_buckets()["Buckets"] == []
    assert sagemaker.list_training_jobs()["TrainingJobSummaries"] == []
    assert sagemaker.list_endpoints()["Endpoints"] == []
    assert fsx.describe_data_repository_associations()["Associations"] == []
    mlscale("emulator", "down", env=env)
    assert mlscale("emulator", "up", env=env).returncode == 0
    assert s3.list_buckets()["Buckets"] == []  # nothing came back from an old snapshot


def test_mlscale_services_keep_state_per_region(emulator):
    """FSx associations and Greengrass deployments live in one account and region, as moto's resources do."""

    def client(service, region):
        return boto3.client(service, endpoint_url=emulator.endpoint_url, region_name=region)

    east, west = client("fsx", "us-east-1"), client("fsx", "us-west-2")
    file_system = east.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=["subnet-0123456789abcdef0"],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
    )["FileSystem"]
    wait_until(
        lambda: (
            east.describe_file_systems(FileSystemIds=[file_system["FileSystemId"]])["FileSystems"][0]["Lifecycle"]
            == "AVAILABLE"
        )
    )
    made = east.create_data_repository_association(
        FileSystemId=file_system["FileSystemId"], FileSystemPath="/east", DataRepositoryPath="s3://mlscale-test/east/"
    )["Association"]
    assert [
        a["AssociationId"]
        for a in east.describe_data_repository_associations()["Associations"]
        if a["FileSystemId"] == file_system["FileSystemId"]
    ] == [made["AssociationId"]]
    assert west.describe_data_repository_associations()["Associations"] == []
    recipe = {
        "RecipeFormatVersion": "2020-01-25",
        "ComponentName": "com.test.RegionProbe",
        "ComponentVersion": "1.0.0",
        "Manifests": [{"Platform": {"os": "linux"}, "Lifecycle": {"Run": "true"}}],
    }
    client("greengrassv2", "us-east-1").create_component_version(inlineRecipe=json.dumps(recipe).encode())
    arn = "arn:aws:greengrass:{}:123456789012:components:com.test.RegionProbe:versions:1.0.0"
    assert client("greengrassv2", "us-east-1").describe_component(arn=arn.format("us-east-1"))["componentVersion"]
    west_greengrass = client("greengrassv2", "us-west-2")
    with pytest.raises(west_greengrass.exceptions.ResourceNotFoundException):
        west_greengrass.describe_component(arn=arn.format("us-west-2"))
