"""Deploy a model to a real-time endpoint (create, or update to a new config), autoscale it, smoke-test it."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.sdk.exceptions import AirflowException
from botocore.exceptions import ClientError

from mlscale.aws import errors
from mlscale.links import EndpointLink
from mlscale.operators.stage import StageOperator, Wait
from mlscale.operators.supersede import MODEL_VERSION_TAG, skip_if_superseded
from mlscale.specs.endpoint import EndpointSpec
from mlscale.waits.kinds import ENDPOINT

if TYPE_CHECKING:
    from airflow.sdk import Context

VARIANT = "AllTraffic"
BUSY = ("Creating", "Updating", "SystemUpdating", "RollingBack")  # another change is under way: wait for it


class SageMakerEndpointDeployOperator(StageOperator):
    """Create the model and an endpoint config named after the artifact, then create or update the endpoint.

    An update is blue/green with the spec's traffic routing (all at once,
    canary or linear), baking and rollback alarms. The wait for InService is
    deferred like every stage's (RollingBack is not an end); then it checks
    that the endpoint really serves the new endpoint config (a failed or
    rolled-back update also ends InService) and fails the task with the
    reason. Then it registers Application Auto Scaling target tracking on
    SageMakerVariantInvocationsPerInstance and sends the sample request.
    XCom: endpoint, config, variant, scaling policy, the sample's answer.

    A retry finds the model and config by name and the endpoint in whatever
    state it is: it waits again instead of updating twice. Runs that deploy
    to one endpoint at once take turns: an endpoint being updated (by
    anyone) is waited for, then the decision is made again; with
    `spec.model_version` set (a tag on the endpoint config), a model older
    than the one the endpoint serves is not deployed: the task is skipped
    as superseded. Killing the task
    while the endpoint is created deletes it; SageMaker has no call to cancel
    an update, which completes or rolls back by its DeploymentConfig. With
    `wait_for_completion=False` the task ends once the create or update is
    accepted (XCom: endpoint_name, endpoint_config); autoscaling and the smoke
    test need InService, so they are then left to the DAG
    (EndpointSensor waits for it).
    """

    aws_hook_class = SageMakerHook
    operator_extra_links = (EndpointLink(),)
    ui_color = "#c9daf8"

    def __init__(self, *, spec: EndpointSpec, poll_interval: float = 15, **kwargs: Any):
        super().__init__(spec=spec, poll_interval=poll_interval, **kwargs)

    def _config_name(self) -> str:
        spec = self.spec
        digest = hashlib.sha256(
            f"{spec.model_artifact}|{spec.instance_type}|{spec.instance_count}".encode()
        ).hexdigest()[:8]
        return f"{spec.endpoint_name[:54]}-{digest}"

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        spec, sagemaker = self.spec, self.hook.conn
        config_name = self._config_name()  # the model and the config share it
        if settled is None:
            self._ensure_model(config_name)
            self._ensure_config(config_name, config_name)
            EndpointLink.persist_for(context, self, endpoint_name=spec.endpoint_name)
            existing = ENDPOINT.describe_or_none(sagemaker, spec.endpoint_name)
            if existing is None:
                self.log.info("Creating endpoint %s with %s", spec.endpoint_name, config_name)
                sagemaker.create_endpoint(EndpointName=spec.endpoint_name, EndpointConfigName=config_name)
                return Wait(ENDPOINT, spec.endpoint_name)
            status = ENDPOINT.status(existing)
            if status in ENDPOINT.failed:
                raise AirflowException(
                    f"Endpoint {spec.endpoint_name} is {status} "
                    f"({existing.get('FailureReason', 'no reason given')}): delete it to deploy "
                    "again; SageMaker updates only InService endpoints"
                )
            if not ENDPOINT.settled(existing):  # our own update of a try before, or another run's
                self.log.info("Endpoint %s is %s; waiting for it, then deciding again.", spec.endpoint_name, status)
                return Wait(ENDPOINT, spec.endpoint_name, stop_on_kill=False, recheck=True)
            if existing["EndpointConfigName"] != config_name:
                self._skip_if_superseded(existing["EndpointConfigName"])
                return self._update(existing["EndpointConfigName"], config_name)
        final = ENDPOINT.describe(sagemaker, spec.endpoint_name)
        if final["EndpointConfigName"] != config_name:
            self._skip_if_superseded(final["EndpointConfigName"])  # a newer run's update came right after ours
            raise AirflowException(
                f"Endpoint {spec.endpoint_name} still serves {final['EndpointConfigName']}, not "
                f"{config_name}: the update failed or rolled back "
                f"({final.get('FailureReason', 'no reason given')})"
            )
        policy = self._autoscale()
        answer = self._smoke_test()
        return {
            "endpoint_name": spec.endpoint_name,
            "endpoint_arn": final["EndpointArn"],
            "endpoint_config": config_name,
            "variant": VARIANT,
            "scaling_policy": policy,
            "sample_answer": answer,
        }

    def lineage(self, context: Context, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        spec = self.spec
        config = {
            "endpoint_config": result["endpoint_config"],
            "variant": VARIANT,
            "instance_type": spec.instance_type,
            "instance_count": spec.instance_count,
            "scaling_policy": result["scaling_policy"],
            "min_capacity": spec.min_capacity,
            "max_capacity": spec.max_capacity,
        }
        return [lineage.s3(spec.model_artifact)], [lineage.arn(result["endpoint_arn"], endpoint=config)], config

    def _update(self, serving: str, config_name: str) -> Wait:
        spec, sagemaker = self.spec, self.hook.conn
        self.log.info("Updating endpoint %s: %s -> %s", spec.endpoint_name, serving, config_name)
        try:
            sagemaker.update_endpoint(
                EndpointName=spec.endpoint_name,
                EndpointConfigName=config_name,
                DeploymentConfig=spec.deployment_config(),
            )
        except ClientError as error:  # another run's update began since we looked: wait for it, then decide again
            if errors.code(error) != "ValidationException":
                raise
            status = sagemaker.describe_endpoint(EndpointName=spec.endpoint_name)["EndpointStatus"]
            if status not in BUSY:  # decided by the endpoint's state: the refusal's words are not an API
                raise
            self.log.info("Endpoint %s is %s (someone else's change): %s", spec.endpoint_name, status, error)
            return Wait(ENDPOINT, spec.endpoint_name, stop_on_kill=False, recheck=True)
        return Wait(ENDPOINT, spec.endpoint_name, stop_on_kill=False)

    def _skip_if_superseded(self, serving_config: str) -> None:
        """Skip when the endpoint serves a newer model (`model_version` of its config) than this task's."""
        sagemaker = self.hook.conn
        arn = sagemaker.describe_endpoint_config(EndpointConfigName=serving_config)["EndpointConfigArn"]
        tags = {t["Key"]: t["Value"] for t in sagemaker.list_tags(ResourceArn=arn).get("Tags", [])}
        skip_if_superseded(self.spec.model_version, tags.get(MODEL_VERSION_TAG), f"endpoint {self.spec.endpoint_name}")

    def submitted(self, context: Context, wait: Wait) -> dict[str, Any]:
        return {"endpoint_name": self.spec.endpoint_name, "endpoint_config": self._config_name()}

    def _ensure_model(self, name: str) -> None:
        sagemaker = self.hook.conn
        if errors.describe_or_none(sagemaker.describe_model, ModelName=name) is None:
            sagemaker.create_model(
                ModelName=name,
                ExecutionRoleArn=self.spec.role_arn,
                PrimaryContainer={"Image": self.spec.image_uri, "ModelDataUrl": self.spec.model_artifact},
            )

    def _ensure_config(self, name: str, model_name: str) -> None:
        sagemaker = self.hook.conn
        if errors.describe_or_none(sagemaker.describe_endpoint_config, EndpointConfigName=name) is None:
            tags = [{"Key": MODEL_VERSION_TAG, "Value": self.spec.model_version}] if self.spec.model_version else []
            sagemaker.create_endpoint_config(
                EndpointConfigName=name,
                ProductionVariants=[
                    {
                        "VariantName": VARIANT,
                        "ModelName": model_name,
                        "InstanceType": self.spec.instance_type,
                        "InitialInstanceCount": self.spec.instance_count,
                        "InitialVariantWeight": 1.0,
                    }
                ],
                Tags=tags,
            )

    def _autoscale(self) -> str:
        spec = self.spec
        scaling = self.aws_client("application-autoscaling")
        resource = f"endpoint/{spec.endpoint_name}/variant/{VARIANT}"
        scaling.register_scalable_target(
            ServiceNamespace="sagemaker",
            ResourceId=resource,
            ScalableDimension="sagemaker:variant:DesiredInstanceCount",
            MinCapacity=spec.min_capacity,
            MaxCapacity=spec.max_capacity,
        )
        name = f"{spec.endpoint_name}-invocations-per-instance"
        scaling.put_scaling_policy(
            PolicyName=name,
            ServiceNamespace="sagemaker",
            ResourceId=resource,
            ScalableDimension="sagemaker:variant:DesiredInstanceCount",
            PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": float(spec.invocations_per_instance),
                "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
                "ScaleInCooldown": spec.scale_in_cooldown,
                "ScaleOutCooldown": spec.scale_out_cooldown,
            },
        )
        self.log.info(
            "Autoscaling %s: %s-%s instances, target %s invocations/instance/minute",
            resource,
            spec.min_capacity,
            spec.max_capacity,
            spec.invocations_per_instance,
        )
        return name

    def _smoke_test(self) -> str | None:
        if not self.spec.sample_body:
            return None
        runtime = self.aws_client("sagemaker-runtime")
        body = self.spec.sample_body
        if not isinstance(body, (str, bytes)):  # a native-rendered template gives back a list
            body = json.dumps(body)
        response = runtime.invoke_endpoint(
            EndpointName=self.spec.endpoint_name, Body=body, ContentType=self.spec.sample_content_type
        )
        answer = response["Body"].read().decode(errors="replace")
        self.log.info("Endpoint %s answered the sample: %s", self.spec.endpoint_name, answer[:500])
        return answer
