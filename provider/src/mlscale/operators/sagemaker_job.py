"""The SageMaker job stages (training, processing, transform, compilation): one job per task run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook
from botocore.exceptions import ClientError

from mlscale.aws.stage_cache import FINGERPRINT_TAG
from mlscale.links import ConsoleLink
from mlscale.naming import attempt_job_name, check_job_name, resource_name
from mlscale.operators.stage import StageOperator, Wait
from mlscale.waits.kinds import ResourceKind

if TYPE_CHECKING:
    from airflow.sdk import Context


class SageMakerJobOperator(StageOperator):
    """Base for operators that run one SageMaker job per task run.

    The job name is derived from (dag_id, task_id, run_id, map_index), so a
    retried task finds its job: running -> wait for it again, Completed ->
    reuse it, Failed/Stopped -> start a new attempt (`-a2`, ...). One task run
    never launches two jobs. Waiting, failures and kills: StageOperator.
    Subclasses say what the job is (`kind`, `_create_job`, `_result`).
    """

    aws_hook_class = SageMakerHook
    template_fields: Sequence[str] = (*StageOperator.template_fields, "job_name")
    kind: ResourceKind
    console_link: type[ConsoleLink]  # the job in the AWS console or on the emulator

    def __init__(self, *, spec: Any, job_name: str | None = None, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)
        self.job_name = job_name

    # Subclasses define `kind`, `console_link`, `_create_job(job_name, region)` and `_result(description) -> dict`.

    def _result(self, description: dict) -> dict[str, Any]:
        return self.kind.summary(description)

    @property
    def cache_noun(self) -> str:  # type: ignore[override]
        return self.kind.noun

    def cache_reusable(self, entry: dict[str, Any]) -> str | None:
        """The recorded job must still be Completed and its outputs still there."""
        description = self.kind.describe_or_none(self.hook.conn, entry["job"])
        if description is None:
            return "it no longer exists"
        if self.kind.status(description) != "Completed":
            return f"it is {self.kind.status(description)}"
        return super().cache_reusable(entry)

    def reusing(self, context: Context, entry: dict[str, Any]) -> None:
        self.console_link.persist_for(context, self, job_name=entry["job"])  # the task's link: the reused job

    def tagged(self, request: dict[str, Any]) -> dict[str, Any]:
        """The create request with the stage's fingerprint among its Tags."""
        tags = [t for t in request.get("Tags", []) if t["Key"] != FINGERPRINT_TAG] + self.fingerprint_tags()
        return {**request, "Tags": tags} if tags else request

    def before_start(self, context: Context) -> None:
        if self.job_name is not None:
            check_job_name(self.job_name, "SageMaker")

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        job_name, existing = self._current_attempt(context)
        status = self.kind.status(existing) if existing else None
        if existing and settled is None:  # an earlier try's job: it keeps the fingerprint it was made with
            self.adopt_fingerprint(self._tagged_fingerprint(existing), f"{self.kind.noun.capitalize()} {job_name}")
        if status == "Completed":
            if settled is None:
                self.log.info("%s %s already completed; reusing its result.", self.kind.noun, job_name)
            result = self._result(existing)
            self.log.info("%s %s completed: %s", self.kind.noun.capitalize(), job_name, result)
            return result
        if existing:
            self.log.info("%s %s is %s; waiting for it again.", self.kind.noun, job_name, status)
        else:
            self._create_job(job_name, self.hook.conn_region_name)
        self.console_link.persist_for(context, self, job_name=job_name)
        return Wait(self.kind, job_name)

    def _tagged_fingerprint(self, description: dict[str, Any]) -> str | None:
        if self._fingerprint is None:
            return None
        arn = next((v for k, v in description.items() if k.endswith("JobArn") and isinstance(v, str)), None)
        try:
            tags = self.hook.conn.list_tags(ResourceArn=arn)["Tags"] if arn else []
        except ClientError:
            tags = []
        return next((t["Value"] for t in tags if t["Key"] == FINGERPRINT_TAG), None)

    def submitted(self, context: Context, wait: Wait) -> dict[str, Any]:
        return {"job_name": wait.resource_id, "status": "InProgress"}

    def _attempt_name(self, context: Context, attempt: int) -> str:
        if self.job_name:
            return attempt_job_name(self.job_name, attempt, "SageMaker")
        ti = context["ti"]
        return resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1), attempt=attempt)

    def _current_attempt(self, context: Context) -> tuple[str, dict | None]:
        """The name this run should use, and the job already under it (None: start one)."""
        attempt = 1
        while True:
            name = self._attempt_name(context, attempt)
            description = self.kind.describe_or_none(self.hook.conn, name)
            if description is None or self.kind.status(description) not in self.kind.failed:
                return name, description
            self.log.info(
                "%s %s ended %s; the next attempt gets a new name.", self.kind.noun, name, self.kind.status(description)
            )
            attempt += 1
