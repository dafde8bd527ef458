"""Ship the compiled model to a Greengrass v2 fleet as a component and wait for every device."""

from __future__ import annotations

import hashlib
import io
import json
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException

from mlscale.links import GreengrassDeploymentLink
from mlscale.naming import resource_name
from mlscale.specs import rules
from mlscale.specs.rules import require

if TYPE_CHECKING:
    from airflow.sdk import Context


class GreengrassHook(AwsBaseHook):
    def __init__(self, *args, **kwargs):
        kwargs["client_type"] = "greengrassv2"
        super().__init__(*args, **kwargs)


class GreengrassEdgeDeployOperator(AwsBaseOperator[GreengrassHook]):
    """Build a component (the Neo-compiled model + an inference app), deploy it to a thing group, wait.

    The component version is derived from the model and the app, so a retry
    reuses it; CreateDeployment carries a clientToken derived from the task
    run, so a retry never deploys twice. Each device runs a smoke inference;
    the task fails when the deployment is canceled (abort criteria) or a device
    fails, naming the devices and the reasons. XCom: deployment id, status, and
    each device's status, reason and answer.
    """

    aws_hook_class = GreengrassHook
    operator_extra_links = (GreengrassDeploymentLink(),)
    template_fields: Sequence[str] = (*aws_template_fields(), "compiled_artifact", "artifact_prefix",
                                      "thing_group_name", "sample", "poll_interval")  # fmt: skip
    ui_color = "#d9ead3"

    def __init__(self, *, component_name: str, compiled_artifact: str, app_source: str, artifact_prefix: str,
                 thing_group_name: str, sample: Any, failure_handling: str = "ROLLBACK",
                 abort_threshold_percent: float = 50.0, component_timeout: int = 120, poll_interval: float = 10,
                 **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.component_name, self.compiled_artifact, self.app_source = component_name, compiled_artifact, app_source
        self.artifact_prefix, self.thing_group_name, self.sample = artifact_prefix, thing_group_name, sample
        self.failure_handling, self.abort_threshold_percent = failure_handling, abort_threshold_percent
        self.component_timeout, self.poll_interval = component_timeout, poll_interval

    def validate(self) -> None:
        require(bool(rules.NAME.match(self.component_name.replace(".", "-"))), "component_name",
                "must be letters, digits, '.' and '-'", self.component_name)  # fmt: skip
        rules.s3_uri(self.compiled_artifact, "compiled_artifact")
        rules.s3_uri(self.artifact_prefix, "artifact_prefix")
        require(Path(self.app_source).is_file(), "app_source", "must be an existing file", self.app_source)
        require(self.failure_handling in ("ROLLBACK", "DO_NOTHING"), "failure_handling",
                "must be ROLLBACK or DO_NOTHING", self.failure_handling)  # fmt: skip
        require(0 < float(self.abort_threshold_percent) <= 100, "abort_threshold_percent", "must be in (0, 100]")
        rules.in_range(int(self.component_timeout), "component_timeout", 1, 3600)

    def execute(self, context: Context) -> dict[str, Any]:
        self.validate()
        app_zip = self._zip_app()
        digest = hashlib.sha256(self.compiled_artifact.encode() + app_zip).hexdigest()
        version = f"1.0.{int(digest[:7], 16)}"
        app_uri = f"{self.artifact_prefix.rstrip('/')}/{digest[:16]}/inference_app.zip"
        self._upload(app_uri, app_zip)
        self._create_component(version, app_uri, digest)
        iot = AwsBaseHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                          config=self.botocore_config, client_type="iot").get_conn()  # fmt: skip
        group_arn = iot.describe_thing_group(thingGroupName=self.thing_group_name)["thingGroupArn"]
        ti = context["ti"]
        token = resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1))
        deployment = self.hook.conn.create_deployment(
            targetArn=group_arn, deploymentName=token, clientToken=token,
            components={self.component_name: {"componentVersion": version}},
            deploymentPolicies={"failureHandlingPolicy": self.failure_handling,
                                "componentUpdatePolicy": {"timeoutInSeconds": int(self.component_timeout),
                                                          "action": "NOTIFY_COMPONENTS"}},
            iotJobConfiguration={"abortConfig": {"criteriaList": [{
                "failureType": "FAILED", "action": "CANCEL", "thresholdPercentage": float(self.abort_threshold_percent),
                "minNumberOfExecutedThings": 1}]}},
        )  # fmt: skip
        self.log.info("Deployment %s of %s %s to %s", deployment["deploymentId"], self.component_name, version, group_arn)
        GreengrassDeploymentLink.persist_for(context, self, deployment_id=deployment["deploymentId"])
        return self._wait(deployment["deploymentId"], group_arn)

    def _zip_app(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            info = zipfile.ZipInfo(Path(self.app_source).name, date_time=(1980, 1, 1, 0, 0, 0))  # reproducible
            archive.writestr(info, Path(self.app_source).read_bytes())
        return buffer.getvalue()

    def _upload(self, uri: str, body: bytes) -> None:
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from mlscale.hooks.sourcedir import upload_if_missing

        upload_if_missing(S3Hook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                                 config=self.botocore_config), body, uri)  # fmt: skip

    def _create_component(self, version: str, app_uri: str, digest: str) -> None:
        model_file = Path(self.compiled_artifact).name
        recipe = {
            "RecipeFormatVersion": "2020-01-25",
            "ComponentName": self.component_name,
            "ComponentVersion": version,
            "ComponentDescription": "mlscale: the Neo-compiled model and a smoke inference",
            "ComponentPublisher": "mlscale",
            "ComponentConfiguration": {"DefaultConfiguration": {"sample": self._sample()}},
            "Manifests": [{
                "Platform": {"os": "linux", "architecture": "/amd64|x86_64|aarch64|arm64/"},
                "Artifacts": [{"URI": self.compiled_artifact}, {"URI": app_uri, "Unarchive": "ZIP"}],
                "Lifecycle": {"Run": {"Script": "python3 {artifacts:decompressedPath}/inference_app/inference_app.py "
                                                f"--model {{artifacts:path}}/{model_file} "
                                                "--sample '{configuration:/sample}'",
                                      "Timeout": int(self.component_timeout)}},
            }],
        }  # fmt: skip
        client = self.hook.conn
        try:
            status = client.create_component_version(inlineRecipe=json.dumps(recipe).encode(),
                                                     clientToken=digest[:64])["status"]  # fmt: skip
        except client.exceptions.ConflictException:
            return  # this model and app are already a component version
        if status["componentState"] != "DEPLOYABLE":
            raise AirflowException(f"Component {self.component_name} {version} is {status['componentState']}: "
                                   f"{status.get('errors')}")  # fmt: skip

    def _sample(self) -> Any:
        return json.loads(self.sample) if isinstance(self.sample, str) else self.sample

    def _wait(self, deployment_id: str, group_arn: str) -> dict[str, Any]:
        client = self.hook.conn
        while (status := client.get_deployment(deploymentId=deployment_id)["deploymentStatus"]) == "ACTIVE":
            time.sleep(float(self.poll_interval))
        devices = {}
        for device in client.list_core_devices(thingGroupArn=group_arn)["coreDevices"]:
            thing = device["coreDeviceThingName"]
            mine = [e for e in client.list_effective_deployments(coreDeviceThingName=thing)["effectiveDeployments"]
                    if e["deploymentId"] == deployment_id]  # fmt: skip
            if mine:
                devices[thing] = {"status": mine[0]["coreDeviceExecutionStatus"], "reason": mine[0].get("reason", ""),
                                  "answer": self._answer(thing)}  # fmt: skip
        result = {"deployment_id": deployment_id, "status": status, "devices": devices}
        for thing, device in sorted(devices.items()):
            self.log.info("%s: %s %s %s", thing, device["status"], device["answer"] or "", device["reason"])
        failed = {t: d["reason"] for t, d in devices.items() if d["status"] not in ("SUCCEEDED", "COMPLETED")}
        if status != "COMPLETED" or failed:
            raise AirflowException(f"Greengrass deployment {deployment_id} {status}; devices not deployed: {failed}")
        return result

    def _answer(self, thing: str) -> str | None:
        logs = AwsBaseHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                           config=self.botocore_config, client_type="logs").get_conn()  # fmt: skip
        group = f"/aws/greengrass/UserComponent/{self.hook.conn_region_name}/{self.component_name}"
        try:
            events = logs.filter_log_events(logGroupName=group, logStreamNames=[thing])["events"]
        except logs.exceptions.ResourceNotFoundException:
            return None
        answers = [e["message"].split("answer=")[1].split()[0] for e in events if "answer=" in e["message"]]
        return answers[-1] if answers else None
