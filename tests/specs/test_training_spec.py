import json

import pytest

from mlscale.specs import FileSystemChannel, InputChannel, SpecError, TrainingSpec
from mlscale.specs.training import build_training_request
from tests.conftest import ROLE_ARN, TRAINING_DIR


def good_spec(**overrides) -> TrainingSpec:
    fields = dict(
        entry_point="train.py",
        source_dir=str(TRAINING_DIR),
        role_arn=ROLE_ARN,
        output_path="s3://bucket/models",
        image_uri="763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311",
        instance_type="ml.g5.2xlarge",
        instance_count=2,
        distribution="torch_distributed",
        hyperparameters={"epochs": 3, "lr": 0.01, "optimizer": "adam"},
        inputs={"train": "s3://bucket/data/train/", "test": InputChannel("s3://bucket/data/test/", "FastFile")},
        metric_definitions={"test:accuracy": r"test_accuracy=([0-9.]+)"},
    )
    fields.update(overrides)
    return TrainingSpec(**fields)


def test_good_spec_validates():
    good_spec().validate()


BAD_SPECS = [
    ({"entry_point": ""}, "entry_point: is required"),
    ({"entry_point": "train.ipynb"}, "entry_point: must be a .py or .sh file"),
    ({"source_dir": "/nonexistent/dir"}, "source_dir: must be an existing directory"),
    ({"entry_point": "missing.py"}, "entry_point: must be a file inside source_dir"),
    ({"role_arn": "mlscale-role"}, "role_arn: must be an IAM role ARN"),
    ({"output_path": "/local/models"}, "output_path: must be an s3://bucket/prefix URI"),
    ({"image_uri": None}, "image_uri: give image_uri, or framework with framework_version"),
    ({"framework": "pytorch"}, "image_uri: give image_uri or framework, not both"),
    ({"image_uri": None, "framework": "pytorch"}, "framework_version: is required with framework='pytorch'"),
    ({"instance_type": "g5.2xlarge"}, "instance_type: must look like ml.<family>.<size>"),
    ({"instance_type": "ml.c5.bogus"}, "instance_type: is not a SageMaker TrainingInstanceType"),
    (
        {"instance_type": "ml.c5.large"},
        "instance_type: is not a SageMaker TrainingInstanceType (botocore's list) (got 'ml.c5.large')",
    ),  # endpoints only
    ({"hyperparameters": {"lr": float("nan")}}, "hyperparameters['lr']: must be JSON"),
    (
        {"hyperparameters": {"lr": float("inf")}},
        "hyperparameters['lr']: must be JSON: a string, number, boolean, list or mapping, not NaN or infinity"
        " (Out of range float values are not JSON compliant) (got inf)",
    ),
    ({"hyperparameters": {"callback": object()}}, "hyperparameters['callback']: must be JSON"),
    (
        {"inputs": {"..": "s3://bucket/x/"}},
        "inputs['..']: channel names are 1-64 characters of letters, digits, '.', '-' and '_', not only dots",
    ),
    ({"instance_count": 0}, "instance_count: must be an integer from 1 to 100"),
    ({"instance_count": "two"}, "instance_count: must be an integer (got 'two')"),
    ({"use_spot": "maybe"}, "use_spot: must be true or false (got 'maybe')"),
    ({"hyperparameters": "epochs=3"}, "hyperparameters: must be a dict"),
    ({"distribution": "horovod"}, "distribution: must be one of"),
    (
        {"hyperparameters": {"sagemaker_program": "x.py"}},
        "hyperparameters['sagemaker_program']: the sagemaker_ prefix is reserved",
    ),
    ({"hyperparameters": {"notes": "x" * 2600}}, "hyperparameters['notes']: values are at most 2500 characters"),
    ({"inputs": {"train data": "s3://bucket/x/"}}, "inputs['train data']: channel names are 1-64 characters"),
    ({"inputs": {"train": "/data/train"}}, "inputs['train']: must be an s3://bucket/prefix URI"),
    (
        {"inputs": {"train": InputChannel("s3://bucket/x/", distribution="Sharded")}},
        "inputs['train'].distribution: must be FullyReplicated or ShardedByS3Key",
    ),
    ({"input_mode": "Pipe"}, "input_mode: must be one of ('File', 'FastFile') (Pipe is replaced by FastFile)"),
    ({"max_runtime_seconds": 29 * 24 * 3600}, "max_runtime_seconds: must be an integer from 1 to 2419200"),
    ({"use_spot": True}, "checkpoint_s3_uri: is required with use_spot=True"),
    (
        {
            "use_spot": True,
            "checkpoint_s3_uri": "s3://bucket/ckpt",
            "max_runtime_seconds": 3600,
            "max_wait_seconds": 60,
        },
        "max_wait_seconds: must be >= max_runtime_seconds (3600)",
    ),
    ({"max_wait_seconds": 7200}, "max_wait_seconds: only applies with use_spot=True"),
    ({"metric_definitions": {"acc": "accuracy=[0-9.]+"}}, "metric_definitions['acc']: needs exactly one capture group"),
    (
        {"metric_definitions": {"acc": "accuracy=([0-9.]+"}},
        "metric_definitions['acc']: is not a regular expression RE2 can run",
    ),
    ({"environment": {"1BAD": "x"}}, "environment['1BAD']: names match"),
    ({"subnets": ["subnet-1"]}, "subnets: subnets and security_group_ids go together"),
    ({"max_retry_attempts": 31}, "max_retry_attempts: must be an integer from 1 to 30"),
    ({"tags": {"aws:owner": "me"}}, "tags['aws:owner']: the aws: prefix is reserved for AWS"),
    ({"code_location": "bucket/code"}, "code_location: must be an s3://bucket/prefix URI"),
    (
        {"inputs": {"train": FileSystemChannel("fs-0123", "/abcd1234/data")}},
        "inputs['train']: a file system channel needs subnets and security_group_ids",
    ),
    (
        {
            "inputs": {"train": {"file_system_id": "fs-1", "directory_path": "data"}},
            "subnets": ["s"],
            "security_group_ids": ["g"],
        },
        "inputs['train'].directory_path: must be an absolute path",
    ),
    ({"inputs": {"train": {"uri": "s3://b/x"}}}, "inputs: a channel dict has unknown keys"),
]


@pytest.mark.parametrize(
    "overrides, message", BAD_SPECS, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD_SPECS)]
)
def test_bad_spec_is_rejected_naming_field_and_rule(overrides, message):
    with pytest.raises(SpecError) as error:
        good_spec(**overrides).validate()
    assert message in str(error.value)


def test_every_bad_spec_has_its_own_message():
    messages = [m for _, m in BAD_SPECS]
    assert len(set(messages)) == len(messages) >= 15


def request(**overrides):
    spec = good_spec(**overrides)
    spec.validate()
    return build_training_request(
        spec,
        job_name="job-1",
        image_uri=spec.image_uri,
        sourcedir_uri="s3://bucket/code/abc/sourcedir.tar.gz",
        region="eu-west-1",
    )


def test_request_is_what_the_sagemaker_sdk_sends():
    req = request()
    hps = req["HyperParameters"]
    # The SDK JSON-encodes every value, its own sagemaker_* keys included.
    assert hps["epochs"] == "3" and hps["lr"] == "0.01" and hps["optimizer"] == '"adam"'
    assert hps["sagemaker_program"] == '"train.py"'
    assert hps["sagemaker_submit_directory"] == '"s3://bucket/code/abc/sourcedir.tar.gz"'
    assert hps["sagemaker_torch_distributed_enabled"] == "true"
    assert hps["sagemaker_region"] == '"eu-west-1"' and hps["sagemaker_job_name"] == '"job-1"'
    assert all(isinstance(v, str) for v in hps.values())
    assert req["ResourceConfig"] == {"InstanceType": "ml.g5.2xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    channels = {c["ChannelName"]: c for c in req["InputDataConfig"]}
    assert channels["train"]["DataSource"]["S3DataSource"] == {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://bucket/data/train/",
        "S3DataDistributionType": "FullyReplicated",
    }
    assert channels["test"]["InputMode"] == "FastFile"
    assert req["AlgorithmSpecification"]["MetricDefinitions"] == [
        {"Name": "test:accuracy", "Regex": r"test_accuracy=([0-9.]+)"}
    ]
    assert "CheckpointConfig" not in req and "VpcConfig" not in req


def test_request_passes_spot_vpc_kms_and_isolation_through():
    req = request(
        use_spot=True,
        checkpoint_s3_uri="s3://bucket/ckpt",
        max_runtime_seconds=3600,
        max_wait_seconds=7200,
        subnets=["subnet-1"],
        security_group_ids=["sg-1"],
        volume_kms_key_id="kms-vol",
        output_kms_key_id="kms-out",
        enable_network_isolation=True,
        encrypt_inter_container_traffic=True,
        max_retry_attempts=2,
        tags={"team": "ml"},
        environment={"NCCL_DEBUG": "INFO"},
    )
    assert req["EnableManagedSpotTraining"] is True
    assert req["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    assert req["CheckpointConfig"] == {"S3Uri": "s3://bucket/ckpt", "LocalPath": "/opt/ml/checkpoints"}
    assert req["VpcConfig"] == {"Subnets": ["subnet-1"], "SecurityGroupIds": ["sg-1"]}
    assert req["ResourceConfig"]["VolumeKmsKeyId"] == "kms-vol"
    assert req["OutputDataConfig"] == {"S3OutputPath": "s3://bucket/models", "KmsKeyId": "kms-out"}
    assert req["EnableNetworkIsolation"] is True and req["EnableInterContainerTrafficEncryption"] is True
    assert req["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    assert req["Tags"] == [{"Key": "team", "Value": "ml"}]
    assert req["Environment"] == {"NCCL_DEBUG": "INFO"}


def test_request_validates_against_botocore_model():
    """botocore's own validator accepts it: the request is shaped as the CreateTrainingJob API wants."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("CreateTrainingJob").input_shape
    report = ParamValidator().validate(request(use_spot=True, checkpoint_s3_uri="s3://bucket/c"), shape)
    assert not report.has_errors(), report.generate_report()


def test_sourcedir_uri_is_keyed_by_content():
    spec = good_spec()
    assert spec.sourcedir_uri("abc123") == "s3://bucket/models/code/abc123/sourcedir.tar.gz"
    assert good_spec(code_location="s3://b2/code/").sourcedir_uri("abc") == "s3://b2/code/abc/sourcedir.tar.gz"


def test_hyperparameter_values_round_trip_through_json():
    req = request(hyperparameters={"layers": [64, 32], "flag": True, "name": "x"})
    decoded = {k: json.loads(v) for k, v in req["HyperParameters"].items()}
    assert decoded["layers"] == [64, 32] and decoded["flag"] is True and decoded["name"] == "x"


def test_framework_without_the_sdk_says_how_to_get_it(monkeypatch):
    import sys

    from mlscale.images import training_image_uri

    monkeypatch.setitem(sys.modules, "sagemaker", None)  # as if neither SDK were installed
    monkeypatch.setitem(sys.modules, "sagemaker.core", None)
    spec = good_spec(image_uri=None, framework="pytorch", framework_version="2.5")
    spec.validate()
    with pytest.raises(
        SpecError, match=r"framework: resolving a framework to its image needs the SageMaker Python SDK"
    ):
        training_image_uri(spec, "us-east-1")
    assert training_image_uri(good_spec(), "us-east-1") == good_spec().image_uri


def test_a_framework_resolves_to_aws_published_image_through_the_sdk():
    from mlscale.images import training_image_uri

    spec = good_spec(
        image_uri=None, framework="pytorch", framework_version="2.5", py_version="py311", instance_type="ml.c5.xlarge"
    )
    spec.validate()
    assert (
        training_image_uri(spec, "eu-west-1")
        == "763104351884.dkr.ecr.eu-west-1.amazonaws.com/pytorch-training:2.5-cpu-py311"
    )
    with pytest.raises(SpecError, match="framework_version"):
        training_image_uri(good_spec(image_uri=None, framework="pytorch", framework_version="0.1"), "us-east-1")


def test_file_system_channel_from_xcom_dicts():
    req = request(
        inputs={
            "train": {"file_system_id": "fs-0123", "directory_path": "/abcd1234/shards"},
            "test": {"s3_uri": "s3://bucket/test/", "input_mode": "FastFile"},
        },
        subnets=["subnet-1"],
        security_group_ids=["sg-1"],
    )
    channels = {c["ChannelName"]: c["DataSource"] for c in req["InputDataConfig"]}
    assert channels["train"] == {
        "FileSystemDataSource": {
            "FileSystemId": "fs-0123",
            "FileSystemType": "FSxLustre",
            "DirectoryPath": "/abcd1234/shards",
            "FileSystemAccessMode": "ro",
        }
    }
    assert channels["test"]["S3DataSource"]["S3Uri"] == "s3://bucket/test/"
    assert req["VpcConfig"] == {"Subnets": ["subnet-1"], "SecurityGroupIds": ["sg-1"]}


def test_rendered_template_strings_become_the_declared_types():
    """An ordinary DAG (no render_template_as_native_obj) renders every template to a string."""
    spec = good_spec(
        instance_count="2",
        use_spot="False",
        max_retry_attempts="None",
        hyperparameters="{'epochs': 3}",
        inputs="{'train': 's3://bucket/train/'}",
        subnets="[]",
        volume_size_gb=" 40 ",
    )
    spec.validate(check_files=False)
    assert (spec.instance_count, spec.use_spot, spec.max_retry_attempts) == (2, False, None)
    assert spec.hyperparameters == {"epochs": 3} and spec.subnets == [] and spec.volume_size_gb == 40
    assert spec.inputs == {"train": "s3://bucket/train/"}


@pytest.mark.parametrize("regex", [r"(a)\1=([0-9.]+)", r"(?=loss)loss=([0-9.]+)"])
def test_a_metric_regex_re2_cannot_run_in_linear_time_is_refused(regex):
    with pytest.raises(SpecError, match=r"metric_definitions\['loss'\]: is not a regular expression RE2 can run"):
        good_spec(metric_definitions={"loss": regex}).validate()


def test_a_nested_quantifier_is_accepted_and_matches_in_linear_time():
    import time

    from mlscale.metric_regex import compile_metric

    good_spec(metric_definitions={"evil": r"(a+)+$"}).validate()
    started = time.perf_counter()
    assert compile_metric(r"(a+)+$").search("a" * 100_000 + "!") is None
    assert time.perf_counter() - started < 0.5
