"""No name, path or query in a request reaches outside the emulator's home (each case escaped once)."""

from __future__ import annotations

import json
import time

import boto3
import botocore.config
import pytest
import torch
from botocore.exceptions import ClientError

from tests.conftest import model_tar, traced_model, training_request, upload_source, wait_for_job
from tests.emulator.test_fsx import settle

pytestmark = pytest.mark.emulator
SUBNET = "subnet-0123456789abcdef0"
UNCHECKED = botocore.config.Config(parameter_validation=False)  # what a hand-written client sends


@pytest.fixture(scope="module")
def raw(emulator):
    def client(service):
        return boto3.client(service, endpoint_url=emulator.endpoint_url, region_name="us-east-1", config=UNCHECKED)

    return client


@pytest.fixture
def outside(emulator):
    """The folder a `../` escape from the emulator's home lands in, checked empty of the probe's names."""
    parent = emulator.home.parent

    def escaped() -> list[str]:
        return sorted(p.name for p in parent.rglob("*escape*") if emulator.home not in p.parents and p != emulator.home)

    before = escaped()
    yield parent
    assert escaped() == before, "a request wrote outside the emulator's home"


def refused(call, code="ValidationException", **request) -> str:
    with pytest.raises(ClientError) as error:
        call(**request)
    assert error.value.response["Error"]["Code"] == code, error.value.response
    return error.value.response["Error"]["Message"]


def test_endpoint_config_and_variant_names_are_aws_names(raw, clients, outside):
    sm = raw("sagemaker")
    clients["s3"].put_object(
        Bucket="mlscale-test",
        Key="escape/model.tar.gz",
        Body=model_tar({"model.pt": traced_model(torch.nn.Linear(2, 1), torch.rand(1, 2))}),
    )
    sm.create_model(
        ModelName="escape-model",
        ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
        PrimaryContainer={"Image": "i", "ModelDataUrl": "s3://mlscale-test/escape/model.tar.gz"},
    )
    variant = {
        "VariantName": "AllTraffic",
        "ModelName": "escape-model",
        "InitialInstanceCount": 1,
        "InstanceType": "ml.m5.large",
    }
    message = refused(sm.create_endpoint_config, EndpointConfigName="../../escape-config", ProductionVariants=[variant])
    assert "endpointConfigName" in message and "regular expression pattern" in message
    message = refused(
        sm.create_endpoint_config,
        EndpointConfigName="escape-cfg",
        ProductionVariants=[{**variant, "VariantName": "../../../escape-variant"}],
    )
    assert "productionVariants.1.member.variantName" in message
    sm.create_endpoint_config(EndpointConfigName="escape-cfg", ProductionVariants=[variant])
    message = refused(sm.create_endpoint, EndpointName="../../../escape-endpoint", EndpointConfigName="escape-cfg")
    assert "endpointName" in message
    assert "endpointName" in refused(
        sm.create_endpoint, EndpointName="escape-newline\n", EndpointConfigName="escape-cfg"
    )


def test_an_unknown_instance_type_is_refused_by_the_model(raw):
    message = refused(
        raw("sagemaker").create_endpoint_config,
        EndpointConfigName="escape-type",
        ProductionVariants=[
            {"VariantName": "v", "ModelName": "m", "InitialInstanceCount": 1, "InstanceType": "ml.bogus.huge"}
        ],
    )
    assert "instanceType" in message and "enum value set" in message


@pytest.fixture(scope="module")
def file_system(raw):
    fsx = raw("fsx")
    fs = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=[SUBNET],
        LustreConfiguration={"DeploymentType": "SCRATCH_2"},
    )["FileSystem"]
    settle(lambda: fsx.describe_file_systems(FileSystemIds=[fs["FileSystemId"]])["FileSystems"][0])
    return fsx, fs["FileSystemId"], fs["LustreConfiguration"]["MountName"]


@pytest.mark.parametrize("path", ["/../../escape-import", "/data/../../../escape-import", "relative"])
def test_an_fsx_association_path_stays_on_its_file_system(file_system, path, outside):
    fsx, fs_id, _ = file_system
    message = refused(
        fsx.create_data_repository_association,
        code="BadRequest",
        FileSystemId=fs_id,
        FileSystemPath=path,
        DataRepositoryPath="s3://mlscale-test/escape/",
    )
    assert "FileSystemPath" in message


def test_an_export_does_not_follow_a_link_out_of_the_file_system(file_system, emulator, clients, tmp_path):
    fsx, fs_id, _ = file_system
    secret = tmp_path / "escape-secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("private")
    root = emulator.home / "fsx" / fs_id
    root.mkdir(parents=True, exist_ok=True)
    (root / "linked").symlink_to(secret, target_is_directory=True)  # as a job with rw access could leave it
    fsx.create_data_repository_association(
        FileSystemId=fs_id, FileSystemPath="/linked", DataRepositoryPath="s3://mlscale-test/escape-export/"
    )
    task = fsx.create_data_repository_task(
        FileSystemId=fs_id, Type="EXPORT_TO_REPOSITORY", Paths=["linked"], Report={"Enabled": False}
    )["DataRepositoryTask"]
    done = settle(lambda: fsx.describe_data_repository_tasks(TaskIds=[task["TaskId"]])["DataRepositoryTasks"][0])
    assert done["Lifecycle"] == "FAILED" and "outside" in done["FailureDetails"]["Message"]
    assert "Contents" not in clients["s3"].list_objects_v2(Bucket="mlscale-test", Prefix="escape-export/")


def test_a_file_system_channel_stays_on_its_file_system(file_system, clients, outside):
    _, fs_id, mount = file_system
    source = upload_source(
        clients["s3"],
        {"train.py": "import os; print(os.listdir(os.environ['SM_CHANNEL_TRAIN']))"},
        "code/escape/sourcedir.tar.gz",
    )
    request = training_request("escape-fsx-channel", source)
    request["InputDataConfig"] = [
        {
            "ChannelName": "train",
            "DataSource": {
                "FileSystemDataSource": {
                    "FileSystemId": fs_id,
                    "FileSystemType": "FSxLustre",
                    "DirectoryPath": f"/{mount}/../../../..",
                    "FileSystemAccessMode": "ro",
                }
            },
        }
    ]
    request["VpcConfig"] = {"Subnets": [SUBNET], "SecurityGroupIds": ["sg-0123456789abcdef0"]}
    clients["sagemaker"].create_training_job(**request)
    job = wait_for_job(clients["sagemaker"], "escape-fsx-channel")
    assert (
        job["TrainingJobStatus"] == "Failed"
        and "DirectoryPath may not contain . or .. segments" in job["FailureReason"]
    )


def test_greengrass_component_and_thing_names_stay_in_the_device(emulator, raw, clients, outside):
    iot, gg = raw("iot"), raw("greengrassv2")
    thing = "../../escape-thing"
    iot.create_thing(
        thingName=thing, attributePayload={"attributes": {"greengrass": "core", "os": "linux", "architecture": "amd64"}}
    )
    thing_arn = iot.describe_thing(thingName=thing)["thingArn"]
    clients["s3"].put_object(Bucket="mlscale-test", Key="escape/run.txt", Body=b"x")
    for name in ("../../../../../escape-component", "com.test.Fine"):
        recipe = {
            "RecipeFormatVersion": "2020-01-25",
            "ComponentName": name,
            "ComponentVersion": "1.0.0",
            "Manifests": [
                {
                    "Platform": {"os": "linux"},
                    "Artifacts": [{"URI": "s3://mlscale-test/escape/run.txt"}],
                    "Lifecycle": {"Run": "echo escaped > escape-ran"},
                }
            ],
        }
        gg.create_component_version(inlineRecipe=json.dumps(recipe).encode())
        deployment = gg.create_deployment(
            targetArn=thing_arn, deploymentName=f"escape-{len(name)}", components={name: {"componentVersion": "1.0.0"}}
        )
        status = settle(
            lambda: gg.get_deployment(deploymentId=deployment["deploymentId"]),  # noqa: B023
            key="deploymentStatus",
            done=("COMPLETED", "FAILED", "CANCELED"),
        )
        assert status["deploymentStatus"] != "ACTIVE"
    assert not list(emulator.home.parent.rglob("escape-ran"))  # the device's Run step never ran anywhere


def test_a_glue_table_name_does_not_become_a_path_outside(raw, clients, outside):
    glue, athena = raw("glue"), raw("athena")
    clients["s3"].put_object(Bucket="mlscale-test", Key="escape/table/part.json", Body=b'{"a": 1}\n')
    glue.create_database(DatabaseInput={"Name": "escape_db"})
    glue.create_table(
        DatabaseName="escape_db",
        TableInput={
            "Name": "../../../../escape-table",
            "StorageDescriptor": {
                "Location": "s3://mlscale-test/escape/table/",
                "Columns": [{"Name": "a", "Type": "int"}],
                "SerdeInfo": {"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe"},
            },
        },
    )
    execution = query(athena, 'SELECT * FROM "escape_db"."../../../../escape-table"', "escape_db")
    assert execution["Status"]["State"] == "FAILED" and "leads outside" in execution["Status"]["StateChangeReason"]


def test_the_query_context_database_is_a_value_not_sql(raw, emulator, outside):
    athena = raw("athena")
    target = emulator.home.parent / "escape-duckdb.csv"
    database = f"x'; COPY (SELECT 42) TO '{target}'; SET schema = 'main"
    execution = query(athena, "SELECT 1 AS one", database)
    assert execution["Status"]["State"] in ("SUCCEEDED", "FAILED")
    assert not target.exists()


def query(athena, sql: str, database: str) -> dict:
    execution_id = athena.start_query_execution(
        QueryString=sql,
        QueryExecutionContext={"Database": database},
        ResultConfiguration={"OutputLocation": "s3://mlscale-test/escape/results/"},
    )["QueryExecutionId"]
    for _ in range(300):
        execution = athena.get_query_execution(QueryExecutionId=execution_id)["QueryExecution"]
        if execution["Status"]["State"] not in ("QUEUED", "RUNNING"):
            return execution
        time.sleep(0.1)
    raise TimeoutError(execution_id)
