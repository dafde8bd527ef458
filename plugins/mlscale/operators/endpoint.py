"""Deploy a model to a real-time endpoint (create, or update to a new config), autoscale it, smoke-test it."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException

from mlscale.links import EndpointLink
from mlscale.specs.endpoint import EndpointSpec

if TYPE_CHECKING:
    from airflow.sdk import Context

VARIANT = "AllTraffic"


class SageMakerEndpointDeployOperator(AwsBaseOperator[SageMakerHook]):
    """Create the model and an endpoint config named after the artifact, then create or update the endpoint.

    An update is blue/green with the spec's traffic routing (all at once,
    canary or linear), baking and rollback alarms. It waits for InService and
    then checks that the endpoint really serves the new endpoint config: a
    failed or rolled-back update also ends InService,
    and fails the task with the reason. Then it registers Application Auto
    Scaling target tracking on SageMakerVariantInvocationsPerInstance and sends
    the sample request. XCom: endpoint, config, variant, scaling policy, the
    sample's answer.
    """

    aws_hook_class = SageMakerHook
    operator_extra_links = (EndpointLink(),)
    template_fields: Sequence[str] = (*aws_template_fields(), "spec", "poll_interval")
    ui_color = "#c9daf8"

    def __init__(self, *, spec: EndpointSpec, poll_interval: float = 15, **kwargs: Any):
        super().__init__(**kwargs)
        self.spec, self.poll_interval = spec, poll_interval

    def execute(self, context: Context) -> dict[str, Any]:
        spec = self.spec
        spec.validate()
        sagemaker = self.hook.conn
        digest = hashlib.sha256(f"{spec.model_artifact}|{spec.instance_type}|{spec.instance_count}".encode()).hexdigest()[:8]
        model_name = config_name = f"{spec.endpoint_name[:54]}-{digest}"
        self._ensure_model(model_name)
        self._ensure_config(config_name, model_name)
        existing = self._describe_or_none()
        if existing is None:
            self.log.info("Creating endpoint %s with %s", spec.endpoint_name, config_name)
            sagemaker.create_endpoint(EndpointName=spec.endpoint_name, EndpointConfigName=config_name)
        elif existing["EndpointConfigName"] != config_name:
            self.log.info("Updating endpoint %s: %s -> %s", spec.endpoint_name, existing["EndpointConfigName"], config_name)
            sagemaker.update_endpoint(EndpointName=spec.endpoint_name, EndpointConfigName=config_name,
                                      DeploymentConfig=spec.deployment_config())  # fmt: skip
        EndpointLink.persist_for(context, self, endpoint_name=spec.endpoint_name)
        final = self._wait()
        if final["EndpointStatus"] != "InService":
            raise AirflowException(f"Endpoint {spec.endpoint_name} is {final['EndpointStatus']}: "
                                   f"{final.get('FailureReason', 'no reason given')}")  # fmt: skip
        if final["EndpointConfigName"] != config_name:
            raise AirflowException(f"Endpoint {spec.endpoint_name} still serves {final['EndpointConfigName']}, not "
                                   f"{config_name}: the update failed or rolled back "
                                   f"({final.get('FailureReason', 'no reason given')})")  # fmt: skip
        policy = self._autoscale()
        answer = self._smoke_test()
        return {"endpoint_name": spec.endpoint_name, "endpoint_config": config_name, "variant": VARIANT,
                "scaling_policy": policy, "sample_answer": answer}  # fmt: skip

    def _ensure_model(self, name: str) -> None:
        sagemaker = self.hook.conn
        try:
            sagemaker.describe_model(ModelName=name)
        except sagemaker.exceptions.ClientError:
            sagemaker.create_model(ModelName=name, ExecutionRoleArn=self.spec.role_arn,
                                   PrimaryContainer={"Image": self.spec.image_uri, "ModelDataUrl": self.spec.model_artifact})  # fmt: skip

    def _ensure_config(self, name: str, model_name: str) -> None:
        sagemaker = self.hook.conn
        try:
            sagemaker.describe_endpoint_config(EndpointConfigName=name)
        except sagemaker.exceptions.ClientError:
            sagemaker.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[{
                "VariantName": VARIANT, "ModelName": model_name, "InstanceType": self.spec.instance_type,
                "InitialInstanceCount": self.spec.instance_count, "InitialVariantWeight": 1.0}])  # fmt: skip

    def _describe_or_none(self) -> dict | None:
        try:
            return self.hook.conn.describe_endpoint(EndpointName=self.spec.endpoint_name)
        except self.hook.conn.exceptions.ClientError as error:
            if "Could not find" in str(error):
                return None
            raise

    def _wait(self) -> dict:
        while True:
            described = self.hook.conn.describe_endpoint(EndpointName=self.spec.endpoint_name)
            if described["EndpointStatus"] not in ("Creating", "Updating", "SystemUpdating"):
                return described
            self.log.info("Endpoint %s is %s", self.spec.endpoint_name, described["EndpointStatus"])
            time.sleep(float(self.poll_interval))

    def _autoscale(self) -> str:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

        spec = self.spec
        scaling = AwsBaseHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                              config=self.botocore_config, client_type="application-autoscaling").get_conn()  # fmt: skip
        resource = f"endpoint/{spec.endpoint_name}/variant/{VARIANT}"
        scaling.register_scalable_target(ServiceNamespace="sagemaker", ResourceId=resource,
                                         ScalableDimension="sagemaker:variant:DesiredInstanceCount",
                                         MinCapacity=spec.min_capacity, MaxCapacity=spec.max_capacity)  # fmt: skip
        name = f"{spec.endpoint_name}-invocations-per-instance"
        scaling.put_scaling_policy(
            PolicyName=name, ServiceNamespace="sagemaker", ResourceId=resource,
            ScalableDimension="sagemaker:variant:DesiredInstanceCount", PolicyType="TargetTrackingScaling",
            TargetTrackingScalingPolicyConfiguration={
                "TargetValue": float(spec.invocations_per_instance),
                "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
                "ScaleInCooldown": spec.scale_in_cooldown, "ScaleOutCooldown": spec.scale_out_cooldown})  # fmt: skip
        self.log.info("Autoscaling %s: %s-%s instances, target %s invocations/instance/minute", resource,
                      spec.min_capacity, spec.max_capacity, spec.invocations_per_instance)  # fmt: skip
        return name

    def _smoke_test(self) -> str | None:
        if not self.spec.sample_body:
            return None
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

        runtime = AwsBaseHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                              config=self.botocore_config, client_type="sagemaker-runtime").get_conn()  # fmt: skip
        body = self.spec.sample_body
        if not isinstance(body, (str, bytes)):  # a native-rendered template gives back a list
            body = json.dumps(body)
        response = runtime.invoke_endpoint(EndpointName=self.spec.endpoint_name, Body=body,
                                           ContentType=self.spec.sample_content_type)  # fmt: skip
        answer = response["Body"].read().decode(errors="replace")
        self.log.info("Endpoint %s answered the sample: %s", self.spec.endpoint_name, answer[:500])
        return answer
