"""CompilationSpec: a SageMaker Neo compilation job, validated against botocore's enums."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import is_int, require

_enum = rules.sagemaker_enum  # TargetDevice, Framework, TargetPlatformOs, ...


@dataclass
class CompilationSpec:
    model_artifact: str
    role_arn: str
    output_uri: str
    input_shapes: dict[str, list[int]]  # {"input0": [1, 64]}
    framework: str = "PYTORCH"
    framework_version: str | None = "2.0"
    target_device: str | None = "ml_c5"
    target_platform: dict[str, str] = field(default_factory=dict)  # {"Os": "LINUX", "Arch": "ARM64"}
    max_runtime_seconds: int = 900  # AWS suggests starting with 900 s
    model_package_arn: str | None = None  # the registered package the artifact is (lineage only; not sent)

    template_fields = ("model_artifact", "role_arn", "output_uri", "input_shapes", "target_device", "model_package_arn")

    def validate(self) -> None:
        coerce_fields(self)
        rules.s3_uri(self.model_artifact, "model_artifact")
        rules.role_arn(self.role_arn)
        rules.s3_uri(self.output_uri, "output_uri")
        require(
            self.framework in _enum("Framework"), "framework", f"must be one of {_enum('Framework')}", self.framework
        )
        require(
            isinstance(self.input_shapes, dict) and bool(self.input_shapes),
            "input_shapes",
            "must map each input name to its shape, e.g. {'input0': [1, 64]}",
        )
        for name, shape in self.input_shapes.items():
            require(
                isinstance(shape, list) and bool(shape) and all(is_int(d) and d > 0 for d in shape),
                f"input_shapes[{name!r}]",
                "must be a list of positive integers",
                shape,
            )
        require(
            bool(self.target_device) != bool(self.target_platform),
            "target_device",
            "give target_device or target_platform, not both and not neither",
        )
        if self.target_device:
            require(
                self.target_device in _enum("TargetDevice"),
                "target_device",
                "must be one of botocore's TargetDevice values (e.g. ml_c5, ml_g4dn, jetson_nano, rasp4b)",
                self.target_device,
            )
        else:
            require(
                self.target_platform.get("Os") in _enum("TargetPlatformOs"),
                "target_platform.Os",
                f"must be one of {_enum('TargetPlatformOs')}",
                self.target_platform.get("Os"),
            )
            require(
                self.target_platform.get("Arch") in _enum("TargetPlatformArch"),
                "target_platform.Arch",
                f"must be one of {_enum('TargetPlatformArch')}",
                self.target_platform.get("Arch"),
            )
        rules.in_range(self.max_runtime_seconds, "max_runtime_seconds", 1, 86400)
        if self.model_package_arn is not None:
            require(
                bool(re.match(r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:model-package/", self.model_package_arn)),
                "model_package_arn",
                "must be a SageMaker model package ARN",
                self.model_package_arn,
            )

    def request(self, job_name: str) -> dict[str, Any]:
        input_config: dict[str, Any] = {
            "S3Uri": self.model_artifact,
            "Framework": self.framework,
            "DataInputConfig": json.dumps(self.input_shapes),
        }
        if self.framework_version:
            input_config["FrameworkVersion"] = self.framework_version
        output: dict[str, Any] = {"S3OutputLocation": self.output_uri}
        if self.target_device:
            output["TargetDevice"] = self.target_device
        else:
            output["TargetPlatform"] = dict(self.target_platform)
        return {
            "CompilationJobName": job_name,
            "RoleArn": self.role_arn,
            "InputConfig": input_config,
            "OutputConfig": output,
            "StoppingCondition": {"MaxRuntimeInSeconds": self.max_runtime_seconds},
        }
