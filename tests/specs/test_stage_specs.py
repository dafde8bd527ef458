"""Bad input for every stage's spec: each refused before any AWS call, naming the field and the rule."""

from __future__ import annotations

import pytest

from mlscale.specs import (
    CompilationSpec,
    EdgeDeploymentSpec,
    EndpointSpec,
    EvaluationSpec,
    FSxLustreSpec,
    ProcessingInput,
    ProcessingOutput,
    ProcessingSpec,
    SpecError,
)
from tests.conftest import REPO, ROLE_ARN

SHARD = str(REPO / "include" / "processing" / "shard.py")
APP = str(REPO / "include" / "edge" / "inference_app.py")


def processing(**overrides) -> ProcessingSpec:
    fields = dict(
        script=SHARD,
        role_arn=ROLE_ARN,
        image_uri="image:1",
        code_location="s3://bucket-1/code",
        inputs={"data": ProcessingInput("s3://bucket-1/in/", "/opt/ml/processing/input/data")},
        outputs={"out": ProcessingOutput("/opt/ml/processing/output/x", "s3://bucket-1/out/")},
    )
    return ProcessingSpec(**{**fields, **overrides})


def endpoint(**overrides) -> EndpointSpec:
    return EndpointSpec(
        **{
            **dict(
                endpoint_name="e-1", model_artifact="s3://bucket-1/m.tar.gz", role_arn=ROLE_ARN, image_uri="image:1"
            ),
            **overrides,
        }
    )


def evaluation(**overrides) -> EvaluationSpec:
    return EvaluationSpec(
        **{
            **dict(
                model_artifact="s3://bucket-1/m.tar.gz",
                role_arn=ROLE_ARN,
                image_uri="image:1",
                features_uri="s3://bucket-1/f/",
                labels_uri="s3://bucket-1/l/",
                output_uri="s3://bucket-1/o/",
                model_package_group="g-1",
            ),
            **overrides,
        }
    )


def compilation(**overrides) -> CompilationSpec:
    return CompilationSpec(
        **{
            **dict(
                model_artifact="s3://bucket-1/m.tar.gz",
                role_arn=ROLE_ARN,
                output_uri="s3://bucket-1/c/",
                input_shapes={"input0": [1, 64]},
            ),
            **overrides,
        }
    )


def fsx(**overrides) -> FSxLustreSpec:
    return FSxLustreSpec(**{**dict(data_repository_path="s3://bucket-1/shards/", subnet_id="subnet-1"), **overrides})


def edge(**overrides) -> EdgeDeploymentSpec:
    return EdgeDeploymentSpec(
        **{
            **dict(
                component_name="com.example.Model",
                compiled_artifact="s3://bucket-1/c.tar.gz",
                app_source=APP,
                artifact_prefix="s3://bucket-1/gg/",
                thing_group_name="fleet-1",
            ),
            **overrides,
        }
    )


BAD = [
    (processing, {"instance_type": "ml.c5.bogus"}, "instance_type: is not a SageMaker ProcessingInstanceType"),
    (
        processing,
        {"inputs": {"data": ProcessingInput("s3://bucket-1/in/", "/opt/ml/processing/../../etc")}},
        "inputs['data'].local_path: must stay below /opt/ml/processing/",
    ),
    (
        processing,
        {"outputs": {"out": ProcessingOutput("/tmp/out", "s3://bucket-1/out/")}},
        "outputs['out'].local_path: must stay below /opt/ml/processing/",
    ),
    (processing, {"instance_count": "-1"}, "instance_count: must be an integer from 1 to 100"),
    (processing, {"arguments": "--shards 2"}, "arguments: must be a list"),
    (endpoint, {"instance_type": "ml.c5.bogus"}, "instance_type: is not a SageMaker ProductionVariantInstanceType"),
    (endpoint, {"instance_count": "one"}, "instance_count: must be an integer"),
    (endpoint, {"role_arn": "arn:aws:iam::1:role/x"}, "role_arn: must be an IAM role ARN"),
    (evaluation, {"instance_type": "ml.c5.bogus"}, "instance_type: is not a SageMaker TransformInstanceType"),
    (evaluation, {"min_value": "high"}, "min_value: must be a number"),
    (evaluation, {"champion_tolerance": "nan"}, "champion_tolerance: must be a finite number"),
    (evaluation, {"metric": "r2"}, "metric: must be one of ['accuracy', 'macro_f1']"),
    (compilation, {"target_device": "bogus"}, "target_device: must be one of"),
    (compilation, {"input_shapes": "not json"}, "input_shapes: must be a dict"),
    (fsx, {"storage_capacity_gib": "lots"}, "storage_capacity_gib: must be an integer"),
    (fsx, {"file_system_path": "/data/../.."}, "file_system_path: must be an absolute path below /"),
    (fsx, {"security_group_ids": "sg-1"}, "security_group_ids: must be a list"),
    (edge, {"abort_threshold_percent": "abc"}, "abort_threshold_percent: must be a number"),
    (edge, {"abort_threshold_percent": 0}, "abort_threshold_percent: must be a number in (0, 100]"),
    (edge, {"component_timeout": "2.5"}, "component_timeout: must be an integer"),
    (edge, {"thing_group_name": "fleet/../x"}, "thing_group_name: must be 1-128 letters"),
    (edge, {"failure_handling": "RETRY"}, "failure_handling: must be ROLLBACK or DO_NOTHING"),
    (edge, {"app_source": "/nonexistent.py"}, "app_source: must be an existing file"),
]


@pytest.mark.parametrize("make, overrides, message", BAD, ids=[f"{m.__name__}-{i}" for i, (m, _, _) in enumerate(BAD)])
def test_bad_stage_specs(make, overrides, message):
    with pytest.raises(SpecError) as error:
        make(**overrides).validate()
    assert message in str(error.value)


def test_the_good_specs_validate():
    for make in (processing, endpoint, evaluation, compilation, fsx, edge):
        make().validate()
