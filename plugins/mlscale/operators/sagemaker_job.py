"""The shared life of an mlscale SageMaker job task: name, reattach, create, wait, fail with the reason."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException
from botocore.exceptions import ClientError

from mlscale.hooks.sagemaker_jobs import TERMINAL_STATES, JobKind, describe_progress
from mlscale.links import ConsoleLink
from mlscale.naming import MAX_LENGTH, resource_name
from mlscale.operators.deferral import default_deferrable
from mlscale.triggers.sagemaker_job import SageMakerJobTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class SageMakerJobOperator(AwsBaseOperator[SageMakerHook]):
    """Base for operators that run one SageMaker job per task run.

    The job name is derived from (dag_id, task_id, run_id, map_index), so a
    retried task finds its job: running -> wait for it again, Completed ->
    reuse it, Failed/Stopped -> start a new attempt (`-a2`, ...). One task run
    never launches two jobs. A Failed or Stopped job fails the task with the
    service's reason. Subclasses say what the job is (`kind`, `_create_job`,
    `_result`).
    """

    aws_hook_class = SageMakerHook
    template_fields: Sequence[str] = (*aws_template_fields(), "spec", "job_name", "poll_interval")
    kind: JobKind
    console_link: type[ConsoleLink]  # the job in the AWS console or on the emulator

    def __init__(self, *, spec: Any, job_name: str | None = None, deferrable: bool | None = None,
                 poll_interval: float = 30, **kwargs: Any):  # fmt: skip
        super().__init__(**kwargs)
        self.spec = spec
        self.job_name = job_name
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval
        self._started_job: str | None = None

    # Subclasses define `kind`, `console_link`, `_create_job(job_name, region)` and `_result(description) -> dict`.

    # -- execute ------------------------------------------------------------------------------------

    def execute(self, context: Context) -> dict[str, Any]:
        self.spec.validate()
        region = self.hook.conn_region_name
        job_name, existing = self._current_attempt(context)
        status = self.kind.status_of(existing) if existing else None
        if status == "Completed":
            self.log.info("%s job %s already completed; reusing its result.", self.kind.name, job_name)
            return self._result(existing)
        if existing:
            self.log.info("%s job %s is %s; waiting for it again.", self.kind.name, job_name, status)
        else:
            self._create_job(job_name, region)
        self._started_job = job_name
        self.console_link.persist_for(context, self, job_name=job_name)
        if self.deferrable:
            self.defer(
                trigger=SageMakerJobTrigger(
                    job_kind=self.kind.name,
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
            raise AirflowException(f"The trigger returned no job: {event!r}")
        return self._finish(self.kind.describe(self.hook, event["job_name"]))

    def on_kill(self) -> None:
        if not self._started_job:
            return
        try:
            self.kind.stop(self.hook, self._started_job)
            self.log.info("Stopped %s job %s.", self.kind.name, self._started_job)
        except ClientError as error:  # already ended: nothing to stop
            self.log.info("%s job %s not stopped: %s", self.kind.name, self._started_job, error)

    # -- steps ------------------------------------------------------------------------------------

    def _attempt_name(self, context: Context, attempt: int) -> str:
        if self.job_name:
            if attempt == 1:
                return self.job_name
            suffix = f"-a{attempt}"
            return self.job_name[: MAX_LENGTH - len(suffix)].rstrip("-") + suffix
        ti = context["ti"]
        return resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1), attempt=attempt)

    def _current_attempt(self, context: Context) -> tuple[str, dict | None]:
        """The name this run should use, and the job already under it (None: start one)."""
        attempt = 1
        while True:
            name = self._attempt_name(context, attempt)
            description = self.kind.describe_or_none(self.hook, name)
            if description is None or self.kind.status_of(description) not in ("Failed", "Stopped"):
                return name, description
            self.log.info("%s job %s ended %s; the next attempt gets a new name.", self.kind.name, name,
                          self.kind.status_of(description))  # fmt: skip
            attempt += 1

    def _wait(self, job_name: str) -> dict:
        """Poll without deferring, printing the job's logs as they arrive."""
        from mlscale.hooks.job_logs import JobLogTail
        from mlscale.hooks.progress import ProgressReporter

        tail = JobLogTail(self.hook, self.kind.log_group, job_name)
        progress = ProgressReporter(self.kind.name_key, self.kind.status_key)
        previous = None
        while True:
            description = self.kind.describe(self.hook, job_name)
            new_lines = tail.poll()
            summary = progress.update(description, new_lines)
            for line in describe_progress(description, previous, self.kind) + new_lines + summary:
                self.log.info(line)
            previous = description
            if self.kind.status_of(description) in TERMINAL_STATES:
                return description
            time.sleep(float(self.poll_interval))

    def _finish(self, description: dict) -> dict[str, Any]:
        name, status = description[self.kind.name_key], self.kind.status_of(description)
        if status == "Failed":
            raise AirflowException(
                f"{self.kind.name.capitalize()} job {name} failed: {description.get('FailureReason', 'no reason given')}"
            )
        if status == "Stopped":
            raise AirflowException(f"{self.kind.name.capitalize()} job {name} was stopped "
                                   f"({description.get('SecondaryStatus', 'Stopped')}) before it completed")  # fmt: skip
        if status != "Completed":
            raise AirflowException(f"{self.kind.name.capitalize()} job {name} ended in unexpected status {status}")
        result = self._result(description)
        self.log.info("%s job %s completed: %s", self.kind.name.capitalize(), name, result)
        return result
