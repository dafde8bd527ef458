"""EvaluationSpec: Batch Transform over held-out data, metrics, the gate and the registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import is_number, require

METRICS = {"accuracy": "classification", "macro_f1": "classification"}  # what evaluation.metrics computes


@dataclass
class EvaluationSpec:
    model_artifact: str  # the training job's model.tar.gz
    role_arn: str
    image_uri: str  # the inference image (the PyTorch inference container for the example)
    features_uri: str  # prefix of the held-out inputs, one record per line
    labels_uri: str  # prefix of the labels, same file order and line order
    output_uri: str  # where predictions, evaluation.json and the confusion matrix go
    model_package_group: str
    metric: str = "accuracy"
    min_value: float = 0.9
    champion_tolerance: float = 0.01
    manual_approval: bool = False
    instance_type: str = "ml.m5.xlarge"
    instance_count: int = 1
    content_type: str = "text/csv"
    accept: str = "text/csv"
    batch_strategy: str = "MultiRecord"
    max_payload_mb: int = 6
    environment: dict[str, str] = field(default_factory=dict)

    template_fields = (
        "model_artifact",
        "role_arn",
        "image_uri",
        "features_uri",
        "labels_uri",
        "output_uri",
        "model_package_group",
        "min_value",
        "champion_tolerance",
        "instance_type",
        "instance_count",
        "manual_approval",
    )

    def validate(self) -> None:
        coerce_fields(self)
        rules.s3_uri(self.model_artifact, "model_artifact")
        require(
            str(self.model_artifact).endswith(".tar.gz"),
            "model_artifact",
            "must be a model.tar.gz",
            self.model_artifact,
        )
        rules.role_arn(self.role_arn)
        require(bool(self.image_uri), "image_uri", "is required (the inference container image)")
        for name in ("features_uri", "labels_uri", "output_uri"):
            rules.s3_uri(getattr(self, name), name)
        require(
            bool(rules.NAME.match(self.model_package_group or "")),
            "model_package_group",
            "must be 1-63 letters, digits and '-'",
            self.model_package_group,
        )
        require(self.metric in METRICS, "metric", f"must be one of {sorted(METRICS)}", self.metric)
        require(
            is_number(self.min_value) and 0 <= self.min_value <= 1, "min_value", "must be from 0 to 1", self.min_value
        )
        require(
            is_number(self.champion_tolerance) and 0 <= self.champion_tolerance <= 1,
            "champion_tolerance",
            "must be from 0 to 1",
            self.champion_tolerance,
        )
        rules.instance_type(self.instance_type, "instance_type", "TransformInstanceType")
        rules.in_range(self.instance_count, "instance_count", 1, 100)
        require(
            self.batch_strategy in ("MultiRecord", "SingleRecord"),
            "batch_strategy",
            "must be MultiRecord or SingleRecord",
            self.batch_strategy,
        )
        rules.in_range(self.max_payload_mb, "max_payload_mb", 0, 100)

    def transform_request(self, job_name: str, model_name: str) -> dict[str, Any]:
        return {
            "TransformJobName": job_name,
            "ModelName": model_name,
            "BatchStrategy": self.batch_strategy,
            "MaxPayloadInMB": self.max_payload_mb,
            "TransformInput": {
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": self.features_uri}},
                "ContentType": self.content_type,
                "SplitType": "Line",
            },
            "TransformOutput": {
                "S3OutputPath": f"{self.output_uri.rstrip('/')}/predictions/",
                "Accept": self.accept,
                "AssembleWith": "Line",
            },
            "TransformResources": {"InstanceType": self.instance_type, "InstanceCount": self.instance_count},
        }
