"""ProcessingSpec: a script run as a SageMaker Processing job, validated, and its CreateProcessingJob request."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import require

LOCAL_ROOT = "/opt/ml/processing/"
CODE_DIR = "/opt/ml/processing/input/code"


@dataclass
class ProcessingInput:
    s3_uri: str
    local_path: str
    distribution: str = "FullyReplicated"  # or ShardedByS3Key: each instance gets ~1/n of the objects

    template_fields = ("s3_uri",)


@dataclass
class ProcessingOutput:
    local_path: str
    s3_uri: str

    template_fields = ("s3_uri",)


@dataclass
class ProcessingSpec:
    """A Python script (ScriptProcessor convention: shipped as the `code` input) and its data."""

    script: str
    role_arn: str
    image_uri: str
    code_location: str  # s3:// prefix; the script goes under <prefix>/<content hash>/
    arguments: list[str] = field(default_factory=list)
    inputs: dict[str, ProcessingInput] = field(default_factory=dict)
    outputs: dict[str, ProcessingOutput] = field(default_factory=dict)
    instance_type: str = "ml.m5.xlarge"
    instance_count: int = 1
    volume_size_gb: int = 30
    environment: dict[str, str] = field(default_factory=dict)
    max_runtime_seconds: int = 24 * 3600
    tags: dict[str, str] = field(default_factory=dict)

    template_fields = (
        "arguments",
        "inputs",
        "outputs",
        "role_arn",
        "image_uri",
        "code_location",
        "instance_type",
        "instance_count",
        "environment",
        "tags",
    )

    def validate(self, check_files: bool = True) -> None:
        coerce_fields(self)
        require(self.script.endswith(".py"), "script", "must be a .py file", self.script)
        if check_files:
            require(Path(self.script).is_file(), "script", "must be an existing file", self.script)
        rules.role_arn(self.role_arn)
        require(bool(self.image_uri), "image_uri", "is required (the processing container image)")
        rules.s3_uri(self.code_location, "code_location")
        require(isinstance(self.arguments, list), "arguments", "must be a list", self.arguments)
        rules.instance_type(self.instance_type, "instance_type", "ProcessingInstanceType")
        rules.in_range(self.instance_count, "instance_count", 1, 100)
        rules.in_range(self.volume_size_gb, "volume_size_gb", 1, 16384)
        rules.in_range(self.max_runtime_seconds, "max_runtime_seconds", 1, 5 * 24 * 3600)
        require("code" not in self.inputs, "inputs['code']", "is reserved for the script")
        require(len(self.inputs) + 1 <= 10, "inputs", "at most 9 inputs (10 with the script)")
        for name, item in self.inputs.items():
            require(bool(rules.NAME.match(name)), f"inputs[{name!r}]", "names are 1-63 letters, digits and '-'")
            rules.s3_uri(item.s3_uri, f"inputs[{name!r}].s3_uri")
            rules.path_under(item.local_path, f"inputs[{name!r}].local_path", LOCAL_ROOT)
            require(
                item.distribution in ("FullyReplicated", "ShardedByS3Key"),
                f"inputs[{name!r}].distribution",
                "must be FullyReplicated or ShardedByS3Key",
                item.distribution,
            )
        require(len(self.outputs) <= 10, "outputs", "at most 10 outputs")
        for name, item in self.outputs.items():
            require(bool(rules.NAME.match(name)), f"outputs[{name!r}]", "names are 1-63 letters, digits and '-'")
            rules.s3_uri(item.s3_uri, f"outputs[{name!r}].s3_uri")
            rules.path_under(item.local_path, f"outputs[{name!r}].local_path", LOCAL_ROOT)
        rules.tags(self.tags)


def build_processing_request(spec: ProcessingSpec, *, job_name: str, code_uri: str) -> dict[str, Any]:
    """CreateProcessingJob for a validated spec, as the SDK's ScriptProcessor sends it."""
    script_name = Path(spec.script).name
    inputs = [
        {
            "InputName": "code",
            "S3Input": {
                "S3Uri": code_uri,
                "LocalPath": CODE_DIR,
                "S3DataType": "S3Prefix",
                "S3InputMode": "File",
                "S3DataDistributionType": "FullyReplicated",
            },
        }
    ]
    inputs += [
        {
            "InputName": name,
            "S3Input": {
                "S3Uri": item.s3_uri,
                "LocalPath": item.local_path,
                "S3DataType": "S3Prefix",
                "S3InputMode": "File",
                "S3DataDistributionType": item.distribution,
            },
        }
        for name, item in spec.inputs.items()
    ]
    request: dict[str, Any] = {
        "ProcessingJobName": job_name,
        "RoleArn": spec.role_arn,
        "AppSpecification": {
            "ImageUri": spec.image_uri,
            "ContainerEntrypoint": ["python3", f"{CODE_DIR}/{script_name}"],
            # templates may render numbers natively; the container gets strings
            "ContainerArguments": [str(a) for a in spec.arguments],
        },
        "ProcessingInputs": inputs,
        "ProcessingResources": {
            "ClusterConfig": {
                "InstanceCount": spec.instance_count,
                "InstanceType": spec.instance_type,
                "VolumeSizeInGB": spec.volume_size_gb,
            }
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": spec.max_runtime_seconds},
    }
    if not request["AppSpecification"]["ContainerArguments"]:
        del request["AppSpecification"]["ContainerArguments"]
    if spec.outputs:
        request["ProcessingOutputConfig"] = {
            "Outputs": [
                {
                    "OutputName": name,
                    "S3Output": {"S3Uri": item.s3_uri, "LocalPath": item.local_path, "S3UploadMode": "EndOfJob"},
                }
                for name, item in spec.outputs.items()
            ]
        }
    if spec.environment:
        request["Environment"] = dict(spec.environment)
    if spec.tags:
        request["Tags"] = [{"Key": k, "Value": v} for k, v in spec.tags.items()]
    return request
