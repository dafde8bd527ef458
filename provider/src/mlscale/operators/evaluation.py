"""Evaluate a trained model with Batch Transform, gate it, and register it in the model registry."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from mlscale.aws import errors
from mlscale.links import TransformJobLink
from mlscale.operators.caching import CacheParts
from mlscale.operators.sagemaker_job import SageMakerJobOperator
from mlscale.specs.evaluation import EvaluationSpec
from mlscale.waits.kinds import TRANSFORM


class SageMakerBatchEvaluationOperator(SageMakerJobOperator):
    """CreateModel + CreateTransformJob over held-out data, then metrics, a gate and CreateModelPackage.

    The gate: `metric >= min_value` and not worse than the champion (the
    latest Approved package of `model_package_group`) by more than
    `champion_tolerance`. The package is registered Approved or Rejected by
    the gate (PendingManualApproval when `manual_approval`), with ModelMetrics
    pointing at evaluation.json. The task succeeds either way: a `gate` task
    downstream stops deployment. XCom: decision, reasons, metrics, package ARN,
    evaluation and confusion-matrix URIs.
    """

    kind = TRANSFORM
    console_link = TransformJobLink
    operator_extra_links = (TransformJobLink(),)
    ui_color = "#d9d2e9"
    cache_stage = "evaluation"
    cache_job_key = "transform_job"

    def __init__(self, *, spec: EvaluationSpec, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)

    def cache_parts(self, context: Any) -> CacheParts:
        """The transform request, the model's container, the gate's settings; the model, features and labels.
        A reused evaluation keeps the decision it made against the champion of its day."""
        spec = self.spec
        model = {
            "Image": spec.image_uri,
            "ModelDataUrl": spec.model_artifact,
            "Environment": dict(spec.environment),
            "ExecutionRoleArn": spec.role_arn,
        }
        gate = {
            "metric": spec.metric,
            "min_value": spec.min_value,
            "champion_tolerance": spec.champion_tolerance,
            "manual_approval": spec.manual_approval,
            "model_package_group": spec.model_package_group,
        }
        return CacheParts(
            {"transform": spec.transform_request("<job>", "<job>"), "model": model, "gate": gate},
            inputs={"model": spec.model_artifact, "features": spec.features_uri, "labels": spec.labels_uri},
            outputs={"evaluation": spec.output_uri},
            extras={"image": spec.image_uri},
        )

    def cache_reusable(self, entry: dict[str, Any]) -> str | None:
        """Also: its model package still has the status the evaluation gave it (a person may have changed it)."""
        why_not = super().cache_reusable(entry)
        arn = entry["result"].get("model_package_arn")
        if why_not or not arn:
            return why_not
        package = errors.describe_or_none(self.hook.conn.describe_model_package, ModelPackageName=arn)
        if package is None:
            return f"its model package {arn} is gone"
        status = package["ModelApprovalStatus"]
        recorded = entry["result"].get("decision")
        return None if status == recorded else f"its model package is now {status}, not {recorded}"

    def lineage(self, context: Any, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        spec = self.spec
        package = lineage.arn(
            result["model_package_arn"],
            model_package={
                "group": spec.model_package_group,
                "approval_status": result["decision"],
                "metrics": result["metrics"],
            },
        )
        details = {
            "transform_job": result["transform_job"],
            "decision": result["decision"],
            "reasons": result["reasons"],
            "metrics": result["metrics"],
        }
        return (
            [lineage.s3(spec.model_artifact), lineage.s3(spec.features_uri), lineage.s3(spec.labels_uri)],
            [lineage.s3(result["evaluation_uri"]), package],
            details,
        )

    def _create_job(self, job_name: str, region: str) -> None:
        sagemaker = self.hook.conn
        if errors.describe_or_none(sagemaker.describe_model, ModelName=job_name) is None:
            sagemaker.create_model(
                ModelName=job_name,
                ExecutionRoleArn=self.spec.role_arn,
                PrimaryContainer={
                    "Image": self.spec.image_uri,
                    "ModelDataUrl": self.spec.model_artifact,
                    "Environment": dict(self.spec.environment),
                },
            )
        self.log.info("Creating transform job %s over %s", job_name, self.spec.features_uri)
        sagemaker.create_transform_job(**self.tagged(self.spec.transform_request(job_name, job_name)))

    def _result(self, description: dict) -> dict[str, Any]:
        from mlscale.aws.s3_objects import put_object
        from mlscale.evaluation.gate import decide
        from mlscale.evaluation.metrics import classification_metrics, confusion_png, parse_predictions

        s3 = self.s3_hook()
        predictions, labels = self._read_outputs(s3, parse_predictions)
        metrics = classification_metrics(labels, predictions)
        base = self.spec.output_uri.rstrip("/")
        evaluation_uri, matrix_uri = f"{base}/evaluation.json", f"{base}/confusion_matrix.png"
        champion, champion_arn = self._champion(s3, evaluation_uri)
        decision = decide(
            self.spec.metric,
            metrics[self.spec.metric],
            float(self.spec.min_value),
            champion,
            float(self.spec.champion_tolerance),
            self.spec.manual_approval,
        )
        report = {
            "metrics": metrics,
            "gate": decision.to_dict(),
            "champion": {"arn": champion_arn, "value": champion},
            "model_artifact": self.spec.model_artifact,
            "transform_job": description["TransformJobName"],
        }
        put_object(s3, evaluation_uri, json.dumps(report, indent=2).encode(), "application/json")
        put_object(s3, matrix_uri, confusion_png(metrics), "image/png")
        package_arn = self._register(evaluation_uri, decision.status, description)
        for reason in decision.reasons:
            self.log.info("gate: %s", reason)
        self.log.info("Model package %s registered %s.", package_arn, decision.status)
        summary = {k: v for k, v in metrics.items() if k != "confusion_matrix"}
        return {
            "decision": decision.status,
            "passed": decision.passed,
            "reasons": decision.reasons,
            "metrics": summary,
            "model_package_arn": package_arn,
            "evaluation_uri": evaluation_uri,
            "confusion_matrix_uri": matrix_uri,
            "transform_job": description["TransformJobName"],
            "model_artifact": self.spec.model_artifact,
        }

    def _read_outputs(self, s3, parse):
        import numpy as np

        out_bucket, out_prefix = s3.parse_s3_url(f"{self.spec.output_uri.rstrip('/')}/predictions/")
        in_bucket, in_prefix = s3.parse_s3_url(self.spec.features_uri)
        label_bucket, label_prefix = s3.parse_s3_url(self.spec.labels_uri)
        features = sorted(k for k in s3.list_keys(bucket_name=in_bucket, prefix=in_prefix) if not k.endswith("/"))
        labels_keys = sorted(
            k for k in s3.list_keys(bucket_name=label_bucket, prefix=label_prefix) if not k.endswith("/")
        )
        if len(features) != len(labels_keys):
            raise ValueError(f"{len(features)} feature files but {len(labels_keys)} label files: they must pair up")
        predictions, labels = [], []
        for feature_key, label_key in zip(features, labels_keys):
            relative = feature_key[len(in_prefix) :].lstrip("/")
            predictions.append(parse(s3.read_key(f"{out_prefix}{relative}.out", bucket_name=out_bucket)))
            labels.append(np.loadtxt(s3.read_key(label_key, bucket_name=label_bucket).splitlines(), dtype=int, ndmin=1))
        return np.concatenate(predictions), np.concatenate(labels)

    def _champion(self, s3, evaluation_uri: str) -> tuple[float | None, str | None]:
        """The newest Approved package that is not this candidate (a retried task registered it already)."""
        sagemaker = self.hook.conn
        try:
            packages = sagemaker.list_model_packages(
                ModelPackageGroupName=self.spec.model_package_group,
                ModelApprovalStatus="Approved",
                SortBy="CreationTime",
                SortOrder="Descending",
            )["ModelPackageSummaryList"]
        except ClientError as error:  # no group yet: no champion; a throttle must not approve without one
            if errors.not_found(error):
                return None, None
            raise
        for summary in packages:
            package = sagemaker.describe_model_package(ModelPackageName=summary["ModelPackageArn"])
            uri = package.get("ModelMetrics", {}).get("ModelQuality", {}).get("Statistics", {}).get("S3Uri")
            containers = package.get("InferenceSpecification", {}).get("Containers") or [{}]
            if uri == evaluation_uri or containers[0].get("ModelDataUrl") == self.spec.model_artifact:
                continue
            if uri:
                bucket, key = s3.parse_s3_url(uri)
                return float(json.loads(s3.read_key(key, bucket_name=bucket))["metrics"][self.spec.metric]), summary[
                    "ModelPackageArn"
                ]
        return None, None

    def _register(self, evaluation_uri: str, status: str, description: dict) -> str:
        sagemaker = self.hook.conn
        group = self.spec.model_package_group
        if errors.describe_or_none(sagemaker.describe_model_package_group, ModelPackageGroupName=group) is None:
            try:
                sagemaker.create_model_package_group(
                    ModelPackageGroupName=group, ModelPackageGroupDescription="mlscale models"
                )
            except ClientError:  # another run made it since we looked: fine if it exists now
                if errors.describe_or_none(sagemaker.describe_model_package_group, ModelPackageGroupName=group) is None:
                    raise
        existing = sagemaker.list_model_packages(ModelPackageGroupName=group)["ModelPackageSummaryList"]
        for summary in existing:  # a retried task registers once
            package = sagemaker.describe_model_package(ModelPackageName=summary["ModelPackageArn"])
            if (
                package.get("ModelMetrics", {}).get("ModelQuality", {}).get("Statistics", {}).get("S3Uri")
                == evaluation_uri
            ):
                return summary["ModelPackageArn"]
        return sagemaker.create_model_package(
            ModelPackageGroupName=group,
            ModelPackageDescription=f"evaluated by {description['TransformJobName']}",
            ModelApprovalStatus=status,
            InferenceSpecification={
                "Containers": [{"Image": self.spec.image_uri, "ModelDataUrl": self.spec.model_artifact}],
                "SupportedContentTypes": [self.spec.content_type],
                "SupportedResponseMIMETypes": [self.spec.accept],
            },
            ModelMetrics={"ModelQuality": {"Statistics": {"ContentType": "application/json", "S3Uri": evaluation_uri}}},
        )["ModelPackageArn"]
