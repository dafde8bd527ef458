"""Ship the compiled model to a Greengrass v2 fleet as a component and wait for every device."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowException

from mlscale.hooks.greengrass import GreengrassHook
from mlscale.links import GreengrassDeploymentLink
from mlscale.naming import resource_name
from mlscale.operators.stage import StageOperator, Wait
from mlscale.operators.supersede import MODEL_VERSION_TAG, skip_if_superseded
from mlscale.specs.edge import EdgeDeploymentSpec
from mlscale.waits.kinds import GREENGRASS_DEPLOYMENT, GREENGRASS_DEVICE, device_deployment_id

if TYPE_CHECKING:
    from airflow.sdk import Context


class GreengrassEdgeDeployOperator(StageOperator):
    """Build a component (the Neo-compiled model + an inference app), deploy it to a thing group, wait.

    The component version is derived from the model and the app, so a retry
    reuses it; CreateDeployment carries a clientToken derived from the task
    run, so a retry never deploys twice. The wait is deferred like every
    stage's; killing the task cancels the deployment. Each device runs a smoke
    inference; the task fails when the deployment is canceled (abort criteria)
    or a device fails, naming the devices and the reasons. Runs that deploy
    to one thing group at once: a new deployment replaces one still rolling
    out (as Greengrass does), and with `spec.model_version` set a model
    older than the group's newest deployment is skipped as superseded, also
    when a newer run's deployment replaced it while it rolled out. XCom: deployment
    id, status, and each device's status, reason and answer
    (`wait_for_completion=False`: the deployment id and target, for
    GreengrassDeploymentSensor).
    """

    aws_hook_class = GreengrassHook
    operator_extra_links = (GreengrassDeploymentLink(),)
    ui_color = "#d9ead3"

    def __init__(self, *, spec: EdgeDeploymentSpec, poll_interval: float = 10, **kwargs: Any):
        super().__init__(spec=spec, poll_interval=poll_interval, **kwargs)

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        if settled is None:
            deployment_id = self._deploy(context)
            if GREENGRASS_DEPLOYMENT.describe(self.hook.conn, deployment_id)["deploymentStatus"] == "ACTIVE":
                return Wait(GREENGRASS_DEPLOYMENT, deployment_id)
        else:
            deployment_id = settled["resource_id"]
        return self._outcome(deployment_id)

    def submitted(self, context: Context, wait: Wait) -> dict[str, Any]:
        deployment = self.hook.conn.get_deployment(deploymentId=wait.resource_id)
        return {
            "deployment_id": wait.resource_id,
            "status": deployment["deploymentStatus"],
            "target_arn": deployment["targetArn"],
        }

    def failed(self, context: Context, event: dict[str, Any]) -> None:
        if event["status"] == "failed":
            deployment = self.hook.conn.get_deployment(deploymentId=event["resource_id"])
            if deployment["deploymentStatus"] == "INACTIVE":  # another run's deployment replaced ours
                self._skip_if_superseded(deployment["targetArn"])
            self._outcome(event["resource_id"])  # canceled by its abort criteria: which devices failed and why
        super().failed(context, event)

    def _skip_if_superseded(self, group_arn: str) -> None:
        """Skip when the thing group has (or is getting) a newer model than this task's `model_version`."""
        client = self.hook.conn
        for summary in client.list_deployments(targetArn=group_arn, historyFilter="ALL")["deployments"]:
            if summary["deploymentStatus"] not in ("ACTIVE", "COMPLETED"):
                continue  # canceled, failed or replaced: not what the devices run
            tags = client.get_deployment(deploymentId=summary["deploymentId"]).get("tags") or {}
            skip_if_superseded(
                self.spec.model_version, tags.get(MODEL_VERSION_TAG), f"thing group {self.spec.thing_group_name}"
            )
            return  # the newest one the devices run (or are getting) decides

    # -- steps ------------------------------------------------------------------------------------------------

    def _deploy(self, context: Context) -> str:
        spec = self.spec
        app_zip = self._zip_app()
        digest = hashlib.sha256(spec.compiled_artifact.encode() + app_zip).hexdigest()
        version = f"1.0.{int(digest[:7], 16)}"
        app_uri = f"{spec.artifact_prefix.rstrip('/')}/{digest[:16]}/inference_app.zip"
        from mlscale.aws.sourcedir import upload_if_missing

        upload_if_missing(self.s3_hook(), app_zip, app_uri)
        self._create_component(version, app_uri, digest)
        group_arn = self.aws_client("iot").describe_thing_group(thingGroupName=spec.thing_group_name)["thingGroupArn"]
        self._skip_if_superseded(group_arn)
        ti = context["ti"]
        for attempt in range(1, 100):
            # one deployment per task run (the client token); one that ended CANCELED or FAILED (the task
            # was killed, or the abort criteria tripped) gets a new attempt on the next try, as a job does
            token = resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1), attempt=attempt)
            deployment = self.hook.conn.create_deployment(
                targetArn=group_arn,
                deploymentName=token,
                clientToken=token,
                tags={MODEL_VERSION_TAG: spec.model_version} if spec.model_version else {},
                components={spec.component_name: {"componentVersion": version}},
                deploymentPolicies={
                    "failureHandlingPolicy": spec.failure_handling,
                    "componentUpdatePolicy": {
                        "timeoutInSeconds": spec.component_timeout,
                        "action": "NOTIFY_COMPONENTS",
                    },
                },
                iotJobConfiguration={
                    "abortConfig": {
                        "criteriaList": [
                            {
                                "failureType": "FAILED",
                                "action": "CANCEL",
                                "thresholdPercentage": float(spec.abort_threshold_percent),
                                "minNumberOfExecutedThings": 1,
                            }
                        ]
                    }
                },
            )
            status = GREENGRASS_DEPLOYMENT.describe(self.hook.conn, deployment["deploymentId"])["deploymentStatus"]
            if status not in GREENGRASS_DEPLOYMENT.failed:
                break
            if status == "INACTIVE":  # a newer run's deployment replaced this one: a new attempt would undo it
                self._skip_if_superseded(group_arn)
            self.log.info(
                "Deployment %s ended %s; the next attempt is a new deployment.", deployment["deploymentId"], status
            )
        self.log.info(
            "Deployment %s of %s %s to %s", deployment["deploymentId"], spec.component_name, version, group_arn
        )
        GreengrassDeploymentLink.persist_for(context, self, deployment_id=deployment["deploymentId"])
        return deployment["deploymentId"]

    def _zip_app(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            info = zipfile.ZipInfo(Path(self.spec.app_source).name, date_time=(1980, 1, 1, 0, 0, 0))  # reproducible
            archive.writestr(info, Path(self.spec.app_source).read_bytes())
        return buffer.getvalue()

    def _create_component(self, version: str, app_uri: str, digest: str) -> None:
        spec = self.spec
        model_file = Path(spec.compiled_artifact).name
        recipe = {
            "RecipeFormatVersion": "2020-01-25",
            "ComponentName": spec.component_name,
            "ComponentVersion": version,
            "ComponentDescription": "mlscale: the Neo-compiled model and a smoke inference",
            "ComponentPublisher": "mlscale",
            "ComponentConfiguration": {"DefaultConfiguration": {"sample": spec.sample_value()}},
            "Manifests": [
                {
                    "Platform": {"os": "linux", "architecture": "/amd64|x86_64|aarch64|arm64/"},
                    "Artifacts": [{"URI": spec.compiled_artifact}, {"URI": app_uri, "Unarchive": "ZIP"}],
                    "Lifecycle": {
                        "Run": {
                            "Script": "python3 {artifacts:decompressedPath}/inference_app/inference_app.py "
                            f"--model {{artifacts:path}}/{model_file} "
                            "--sample '{configuration:/sample}'",
                            "Timeout": spec.component_timeout,
                        }
                    },
                }
            ],
        }
        client = self.hook.conn
        try:
            status = client.create_component_version(inlineRecipe=json.dumps(recipe).encode(), clientToken=digest[:64])[
                "status"
            ]
        except client.exceptions.ConflictException:
            return  # this model and app are already a component version
        if status["componentState"] != "DEPLOYABLE":
            raise AirflowException(
                f"Component {spec.component_name} {version} is {status['componentState']}: {status.get('errors')}"
            )

    def _outcome(self, deployment_id: str) -> dict[str, Any]:
        """Each device's status, reason and smoke answer; raises when the deployment or a device failed."""
        client = self.hook.conn
        deployment = client.get_deployment(deploymentId=deployment_id)
        devices = {}
        for device in client.list_core_devices(thingGroupArn=deployment["targetArn"])["coreDevices"]:
            thing = device["coreDeviceThingName"]
            mine = GREENGRASS_DEVICE.describe(client, device_deployment_id(thing, deployment_id))
            if mine["coreDeviceExecutionStatus"] != "PENDING":
                devices[thing] = {
                    "status": mine["coreDeviceExecutionStatus"],
                    "reason": mine.get("reason", ""),
                    "answer": self._answer(thing),
                }
        status = deployment["deploymentStatus"]
        if status == "INACTIVE":  # replaced by another run's deployment, maybe before ours was first described
            self._skip_if_superseded(deployment["targetArn"])
        for thing, device in sorted(devices.items()):
            self.log.info("%s: %s %s %s", thing, device["status"], device["answer"] or "", device["reason"])
        failed = {t: d["reason"] for t, d in devices.items() if d["status"] not in GREENGRASS_DEVICE.succeeded}
        if status != "COMPLETED" or failed:
            raise AirflowException(f"Greengrass deployment {deployment_id} {status}; devices not deployed: {failed}")
        return {
            "deployment_id": deployment_id,
            "status": status,
            "devices": devices,
            "target_arn": deployment.get("targetArn"),
        }

    def lineage(self, context: Context, result: dict[str, Any]) -> tuple[list, list, dict]:
        """The compiled model in; the deployment out (Greengrass ARNs: arn:aws:greengrass:<region>:<account>)."""
        from mlscale.aws import lineage

        region, account = result["target_arn"].split(":")[3:5]
        deployment = {
            "component": self.spec.component_name,
            "thing_group_arn": result["target_arn"],
            "status": result["status"],
            "devices": {t: d["status"] for t, d in result["devices"].items()},
        }
        out = lineage.arn(
            f"arn:aws:greengrass:{region}:{account}:deployments:{result['deployment_id']}",
            greengrass_deployment=deployment,
        )
        return [lineage.s3(self.spec.compiled_artifact)], [out], deployment

    def _answer(self, thing: str) -> str | None:
        logs = self.aws_client("logs")
        group = f"/aws/greengrass/UserComponent/{self.hook.conn_region_name}/{self.spec.component_name}"
        try:
            events = logs.filter_log_events(logGroupName=group, logStreamNames=[thing])["events"]
        except logs.exceptions.ResourceNotFoundException:
            return None
        answers = [e["message"].split("answer=")[1].split()[0] for e in events if "answer=" in e["message"]]
        return answers[-1] if answers else None
