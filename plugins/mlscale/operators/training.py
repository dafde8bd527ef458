"""Run a SageMaker script-mode training job (distributed or not) and wait for it."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException
from botocore.exceptions import ClientError

from mlscale.links import TrainingJobLink
from mlscale.naming import MAX_LENGTH, resource_name
from mlscale.operators.deferral import default_deferrable
from mlscale.specs.training import TrainingSpec, build_training_request
from mlscale.triggers.training import TERMINAL_STATES, TrainingJobTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context

RUNNING_STATES = ("InProgress", "Stopping")


class SageMakerScriptTrainingOperator(AwsBaseOperator[SageMakerHook]):
    """Start a script-mode training job from a TrainingSpec and wait for its end.

    The job name is derived from (dag_id, task_id, run_id, map_index), so a
    retried task finds its job: running -> wait for it again, Completed ->
    reuse it, Failed/Stopped -> start a new attempt (`-a2`, ...). One task run
    never launches two jobs. A Failed or Stopped job fails the task with the
    service's reason. Returns (XCom) the job name, model artifact URI, final
    metrics and billable seconds.

    :param spec: the job; see mlscale.specs.TrainingSpec. Validated before any AWS call.
    :param job_name: explicit base name instead of the derived one.
    :param deferrable: wait in the triggerer (default: True unless
        `[operators] default_deferrable` says otherwise).
    :param poll_interval: seconds between DescribeTrainingJob calls.
    """

    aws_hook_class = SageMakerHook
    template_fields: Sequence[str] = (*aws_template_fields(), "spec", "job_name", "poll_interval")
    operator_extra_links = (TrainingJobLink(),)
    ui_color = "#ffd9b3"

    def __init__(
        self,
        *,
        spec: TrainingSpec,
        job_name: str | None = None,
        deferrable: bool | None = None,
        poll_interval: float = 30,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.spec = spec
        self.job_name = job_name
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval
        self._started_job: str | None = None

    # -- execute ------------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        self.spec.validate()
        region = self.hook.conn_region_name
        job_name, existing = self._current_attempt(context)
        if existing and existing["TrainingJobStatus"] == "Completed":
            self.log.info("Training job %s already completed; reusing its result.", job_name)
            return self._result(existing)
        if existing:
            self.log.info("Training job %s is %s; waiting for it again.", job_name, existing["TrainingJobStatus"])
        else:
            self._create_job(job_name, region)
        self._started_job = job_name
        TrainingJobLink.persist(context=context, operator=self, region_name=region,
                                aws_partition=self.hook.conn_partition, job_name=job_name)  # fmt: skip

        if self.deferrable:
            self.defer(
                trigger=TrainingJobTrigger(
                    job_name=job_name,
                    poll_interval=self.poll_interval,
                    aws_conn_id=self.aws_conn_id,
                    region_name=self.region_name,
                    verify=self.verify,
                    botocore_config=self.botocore_config,
                ),
                method_name="execute_complete",
            )
        return self._finish(self._wait(job_name))

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if not event or "job_name" not in event:
            raise AirflowException(f"Training trigger returned no job: {event!r}")
        return self._finish(self.hook.describe_training_job(event["job_name"]))

    def on_kill(self) -> None:
        if not self._started_job:
            return
        try:
            self.hook.conn.stop_training_job(TrainingJobName=self._started_job)
            self.log.info("Stopped training job %s.", self._started_job)
        except ClientError as error:  # already ended: nothing to stop
            self.log.info("Training job %s not stopped: %s", self._started_job, error)

    # -- steps ------------------------------------------------------------------------------------

    def _base_name(self, context: Context) -> str:
        if self.job_name:
            return self.job_name
        ti = context["ti"]
        return resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1))

    def _current_attempt(self, context: Context) -> tuple[str, dict | None]:
        """The name this run should use, and the job already under it (None: start one)."""
        base = self._base_name(context)
        attempt = 1
        while True:
            name = base if attempt == 1 else _attempt_name(base, attempt, context, self.job_name)
            description = self._describe_or_none(name)
            if description is None or description["TrainingJobStatus"] not in ("Failed", "Stopped"):
                return name, description
            self.log.info("Training job %s ended %s; the next attempt gets a new name.", name,
                          description["TrainingJobStatus"])  # fmt: skip
            attempt += 1

    def _describe_or_none(self, name: str) -> dict | None:
        try:
            return self.hook.describe_training_job(name)
        except ClientError as error:
            message = error.response.get("Error", {}).get("Message", "")
            if error.response.get("Error", {}).get("Code") == "ValidationException" and "find" in message:
                return None
            raise

    def _create_job(self, job_name: str, region: str) -> None:
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from mlscale.hooks.sourcedir import pack_source_dir, upload_if_missing
        from mlscale.images import training_image_uri

        image_uri = training_image_uri(self.spec, region)
        archive, content_hash = pack_source_dir(self.spec.source_dir)
        sourcedir_uri = self.spec.sourcedir_uri(content_hash)
        s3 = S3Hook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                    config=self.botocore_config)  # fmt: skip
        if upload_if_missing(s3, archive, sourcedir_uri):
            self.log.info("Uploaded source dir %s to %s", self.spec.source_dir, sourcedir_uri)
        request = build_training_request(
            self.spec, job_name=job_name, image_uri=image_uri, sourcedir_uri=sourcedir_uri, region=region
        )
        self.log.info("Creating training job %s: %s x %s, image %s", job_name, self.spec.instance_count,
                      self.spec.instance_type, image_uri)  # fmt: skip
        self.hook.conn.create_training_job(**request)

    def _wait(self, job_name: str) -> dict:
        """Poll without deferring, printing the job's logs as they arrive."""
        from mlscale.hooks.training_logs import TrainingLogTail
        from mlscale.hooks.training_status import describe_progress

        tail = TrainingLogTail(self.hook, job_name)
        previous = None
        while True:
            description = self.hook.describe_training_job(job_name)
            for line in describe_progress(description, previous) + tail.poll():
                self.log.info(line)
            previous = description
            if description["TrainingJobStatus"] in TERMINAL_STATES:
                return description
            time.sleep(float(self.poll_interval))

    def _finish(self, description: dict) -> dict[str, Any]:
        name, status = description["TrainingJobName"], description["TrainingJobStatus"]
        if status == "Failed":
            raise AirflowException(f"Training job {name} failed: {description.get('FailureReason', 'no reason given')}")
        if status == "Stopped":
            raise AirflowException(
                f"Training job {name} was stopped ({description.get('SecondaryStatus')}) before it completed"
            )
        if status != "Completed":
            raise AirflowException(f"Training job {name} ended in unexpected status {status}")
        result = self._result(description)
        self.log.info("Training job %s completed: %s", name, result["final_metrics"])
        return result

    @staticmethod
    def _result(description: dict) -> dict[str, Any]:
        return {
            "job_name": description["TrainingJobName"],
            "job_arn": description["TrainingJobArn"],
            "status": description["TrainingJobStatus"],
            "instance_count": description["ResourceConfig"]["InstanceCount"],
            "instance_type": description["ResourceConfig"]["InstanceType"],
            "model_artifact": description.get("ModelArtifacts", {}).get("S3ModelArtifacts"),
            "final_metrics": {m["MetricName"]: m["Value"] for m in description.get("FinalMetricDataList", [])},
            "billable_seconds": description.get("BillableTimeInSeconds"),
            "training_seconds": description.get("TrainingTimeInSeconds"),
        }


def _attempt_name(base: str, attempt: int, context: Context, explicit: str | None) -> str:
    if explicit:
        suffix = f"-a{attempt}"
        return explicit[: MAX_LENGTH - len(suffix)].rstrip("-") + suffix
    ti = context["ti"]
    return resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1), attempt=attempt)
