"""FSx for Lustre on the emulator: validation, idempotency, associations and real import tasks."""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from tests.conftest import training_request, upload_source, wait_for_job

pytestmark = pytest.mark.emulator
SUBNET = "subnet-0123456789abcdef0"


@pytest.fixture(scope="module")
def fsx(emulator):
    import boto3

    return boto3.client("fsx", endpoint_url=emulator.endpoint_url, region_name="us-east-1")


def create(fsx, token=None, deployment="SCRATCH_2", capacity=1200, subnets=(SUBNET,), **lustre):
    kwargs = {"ClientRequestToken": token} if token else {}
    return fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=capacity,
        SubnetIds=list(subnets),
        LustreConfiguration={"DeploymentType": deployment, **lustre},
        **kwargs,
    )["FileSystem"]


def settle(describe, key="Lifecycle", done=("AVAILABLE", "SUCCEEDED", "FAILED")):
    for _ in range(100):
        item = describe()
        if item[key] in done:
            return item
        time.sleep(0.1)
    raise TimeoutError(item)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"capacity": 1000},
            "Storage capacity 1000 GiB is not valid for SCRATCH_2: use 1200 GiB, 2400 GiB, or a multiple",
        ),
        ({"capacity": 3600}, "Storage capacity 3600 GiB is not valid"),
        ({"subnets": (SUBNET, "subnet-0123456789abcdef1")}, "exactly one subnet"),
        ({"deployment": "PERSISTENT_2", "PerUnitStorageThroughput": 300}, "must be one of (125, 250, 500, 1000)"),
    ],
)
def test_invalid_lustre_requests_are_refused(fsx, kwargs, message):
    with pytest.raises(ClientError, match=message.replace("(", r"\(").replace(")", r"\)")):
        create(fsx, **kwargs)


def test_create_is_idempotent_on_the_client_token_and_becomes_available(fsx):
    first, again = create(fsx, token="same-token"), create(fsx, token="same-token")
    assert first["FileSystemId"] == again["FileSystemId"]
    assert first["Lifecycle"] == "CREATING" and len(first["LustreConfiguration"]["MountName"]) == 8
    described = settle(lambda: fsx.describe_file_systems(FileSystemIds=[first["FileSystemId"]])["FileSystems"][0])
    assert described["Lifecycle"] == "AVAILABLE"


def test_association_rules(fsx):
    scratch_1 = create(fsx, deployment="SCRATCH_1")
    with pytest.raises(ClientError, match="not supported on SCRATCH_1"):
        fsx.create_data_repository_association(
            FileSystemId=scratch_1["FileSystemId"], FileSystemPath="/a", DataRepositoryPath="s3://mlscale-test/a/"
        )
    fs_id = create(fsx)["FileSystemId"]
    fsx.create_data_repository_association(
        FileSystemId=fs_id, FileSystemPath="/data", DataRepositoryPath="s3://mlscale-test/a/"
    )
    with pytest.raises(ClientError, match="overlaps an existing association"):
        fsx.create_data_repository_association(
            FileSystemId=fs_id, FileSystemPath="/data/sub", DataRepositoryPath="s3://mlscale-test/b/"
        )
    for i in range(7):
        fsx.create_data_repository_association(
            FileSystemId=fs_id, FileSystemPath=f"/d{i}", DataRepositoryPath=f"s3://mlscale-test/d{i}/"
        )
    with pytest.raises(ClientError, match="at most 8 associations"):
        fsx.create_data_repository_association(
            FileSystemId=fs_id, FileSystemPath="/nine", DataRepositoryPath="s3://mlscale-test/nine/"
        )


def test_import_task_copies_the_objects_and_training_reads_them_as_a_file_system_channel(fsx, clients):
    for i in range(3):
        clients["s3"].put_object(Bucket="mlscale-test", Key=f"fsx-data/part-{i}.txt", Body=f"line {i}\n".encode())
    fs = create(fsx)
    fs_id, mount = fs["FileSystemId"], fs["LustreConfiguration"]["MountName"]
    settle(lambda: fsx.describe_file_systems(FileSystemIds=[fs_id])["FileSystems"][0])
    association = fsx.create_data_repository_association(
        FileSystemId=fs_id, FileSystemPath="/data", DataRepositoryPath="s3://mlscale-test/fsx-data/"
    )["Association"]
    settle(
        lambda: fsx.describe_data_repository_associations(AssociationIds=[association["AssociationId"]])[
            "Associations"
        ][0]
    )
    task = fsx.create_data_repository_task(
        FileSystemId=fs_id, Type="IMPORT_METADATA_FROM_REPOSITORY", Paths=["data"], Report={"Enabled": False}
    )["DataRepositoryTask"]
    done = settle(lambda: fsx.describe_data_repository_tasks(TaskIds=[task["TaskId"]])["DataRepositoryTasks"][0])
    assert done["Lifecycle"] == "SUCCEEDED" and done["Status"]["SucceededCount"] == 3

    script = "import os\nd = os.environ['SM_CHANNEL_TRAIN']\nprint('files=' + ','.join(sorted(os.listdir(d))))\n"
    source = upload_source(clients["s3"], {"train.py": script}, "code/fsx-train/sourcedir.tar.gz")
    request = training_request("reads-fsx", source)
    request["InputDataConfig"] = [
        {
            "ChannelName": "train",
            "DataSource": {
                "FileSystemDataSource": {
                    "FileSystemId": fs_id,
                    "FileSystemType": "FSxLustre",
                    "DirectoryPath": f"/{mount}/data",
                    "FileSystemAccessMode": "ro",
                }
            },
        }
    ]
    without_vpc = dict(request, TrainingJobName="reads-fsx-no-vpc")
    clients["sagemaker"].create_training_job(**without_vpc)
    assert "needs the job's VpcConfig" in wait_for_job(clients["sagemaker"], "reads-fsx-no-vpc")["FailureReason"]
    request["VpcConfig"] = {"Subnets": [SUBNET], "SecurityGroupIds": ["sg-0123456789abcdef0"]}
    clients["sagemaker"].create_training_job(**request)
    job = wait_for_job(clients["sagemaker"], "reads-fsx")
    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    metrics_free_log = clients["logs"].filter_log_events(
        logGroupName="/aws/sagemaker/TrainingJobs", logStreamNamePrefix="reads-fsx/"
    )["events"]
    assert any("files=part-0.txt,part-1.txt,part-2.txt" in e["message"] for e in metrics_free_log)
