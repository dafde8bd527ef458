"""The life every mlscale stage shares: validate the spec, find or create, wait (deferred), finish or fail.

A stage says only what differs: `advance(context, settled)` looks at what
exists under the stage's deterministic name, creates what is missing, and
answers either its result or a `Wait` on one resource. The base validates
the spec before any AWS call, waits (in the triggerer by default, through
StageTrigger; in the worker with `deferrable=False`; not at all with
`wait_for_completion=False`, leaving it to the stage's sensor), fails with
the service's reason, calls `advance` again once the resource settles, and
stops what the task started when it is killed. A stage that can be cached
(`cache_stage`) fingerprints what decides its output before it starts and, with
`cache=CacheConfig(enabled=True)`, reuses the latest successful job of that
fingerprint instead (mlscale.operators.caching).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.operators.base_aws import AwsBaseOperator
from airflow.providers.amazon.aws.utils import validate_execute_complete_event
from airflow.providers.amazon.aws.utils.mixins import aws_template_fields
from airflow.sdk.exceptions import AirflowException
from botocore.exceptions import ClientError

from mlscale.aws.clients import shared_hook
from mlscale.aws.stage_cache import FINGERPRINT_TAG
from mlscale.operators import caching
from mlscale.operators.deferral import default_deferrable
from mlscale.specs.cache import CacheConfig
from mlscale.specs.coerce import NONE, convert
from mlscale.specs.rules import require
from mlscale.triggers.stage import StageTrigger
from mlscale.waits.kinds import ResourceKind, failure_message
from mlscale.waits.watch import ResourceWatch

if TYPE_CHECKING:
    from airflow.sdk import Context


@dataclass(frozen=True)
class Wait:
    """What `advance` answers while AWS works: the resource to wait on; whether killing the task stops it.

    `recheck`: the wait is on someone else's work (another run updating a shared endpoint): once it settles,
    `advance` decides again from the start (`settled` None) instead of taking the outcome for its own.
    """

    kind: ResourceKind
    resource_id: str
    stop_on_kill: bool = True
    recheck: bool = False


class StageOperator(AwsBaseOperator):
    """Base of every mlscale stage (subclasses set `aws_hook_class` and implement `advance`).

    :param spec: the stage's typed spec, validated before any AWS call.
    :param wait_for_completion: wait for the stage's resource (default); with
        False the task ends once it is created, and the stage's sensor waits.
    :param deferrable: wait in the triggerer (default: True unless
        `[operators] default_deferrable` is set otherwise).
    :param poll_interval: seconds between Describe calls while waiting.
    :param cache: a CacheConfig (or True): reuse the latest successful job with
        this stage's fingerprint; off by default. Stages that deploy refuse it.
    :param enabled: False (or a template that renders to false) makes the stage not
        needed this run: it logs `skip_reason` and succeeds at once with
        `not_needed()` (rather than skipping: a skipped task skips everything
        downstream, and a pipeline that picks one of two stages goes on after either).

    The result is one XCom per key as well as the whole (`multiple_outputs`),
    so a DAG passes `train.output["model_artifact"]` on; XComArgs inside the
    spec set the task's upstream as they do in an operator's own arguments.
    """

    template_fields: Sequence[str] = (
        *aws_template_fields(),
        *("spec", "poll_interval", "cache", "enabled", "skip_reason"),
    )
    cache_stage: str | None = None  # the stage's name in the cache; None: never cached (deployments)
    cache_noun = "job"
    cache_job_key = "job_name"  # the result's key naming what a cache entry records

    def __init__(
        self,
        *,
        spec: Any = None,
        wait_for_completion: bool = True,
        deferrable: bool | None = None,
        poll_interval: float = 30,
        cache: CacheConfig | bool | None = None,
        enabled: bool | str = True,
        skip_reason: str = "",
        **kwargs: Any,
    ):
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.spec = spec
        self.enabled, self.skip_reason = enabled, skip_reason
        self.wait_for_completion = wait_for_completion
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval
        self.cache = CacheConfig.of(cache)
        if self.cache is not None and self.cache_stage is None:
            raise ValueError(f"cache: {type(self).__name__} is never cached (it deploys or decides per run)")
        self._waiting: Wait | None = None
        self._fingerprint: str | None = None

    def _set_xcomargs_dependencies(self) -> None:
        """As BaseOperator does for its template fields, but also inside the spec (and its channels), and with
        one set_upstream call for all the distinct tasks: BaseOperator makes one per reference, and each hashes
        the DAG (its schedule's repr, for an asset-or-time schedule): a stage reads a dozen XComArgs."""
        from airflow.sdk.definitions.xcom_arg import XComArg

        values = [getattr(self, field, None) for field in self.template_fields]
        upstream = {
            operator.task_id: operator
            for value in (*values, *_template_values(self.spec))
            for operator, _ in XComArg.iter_xcom_references(value)
        }
        if upstream:
            self.set_upstream(list(upstream.values()))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A stage that can be cached (`cache_stage`) says what decides its output: `cache_parts(context)`
        answers the mlscale.operators.caching.CacheParts, making no AWS call. Refused here, at import,
        rather than when a run first fingerprints it."""
        super().__init_subclass__(**kwargs)
        if cls.cache_stage is not None and not callable(getattr(cls, "cache_parts", None)):
            raise TypeError(f"{cls.__name__} sets cache_stage {cls.cache_stage!r} but defines no cache_parts")

    # -- what a stage implements ------------------------------------------------------------------------------

    @abstractmethod
    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        """Move on from wherever the stage's resources are; `settled` is the last wait's success event."""

    def before_start(self, context: Context) -> dict[str, Any] | None:
        """Checks of the operator's own arguments (the base checks the spec), before any AWS call. A result
        here is the task's result, and nothing starts: a stage this run does not need."""
        return None

    def not_needed(self) -> dict[str, Any]:
        """The result of a stage this run does not need (`enabled` false)."""
        return {"enabled": False, "skip_reason": self.skip_reason}

    def submitted(self, context: Context, wait: Wait) -> dict[str, Any]:
        """The XCom of `wait_for_completion=False`: what a sensor needs to wait on it."""
        return {"kind": wait.kind.name, "resource_id": wait.resource_id}

    def cache_reusable(self, entry: dict[str, Any]) -> str | None:
        """Why the recorded job cannot be reused (None: it can): by default, an output it wrote is gone."""
        missing = caching.missing_outputs(self.s3_hook().get_conn(), caching.s3_uris_in(entry["result"]))
        return f"its output {missing[0]} is gone" if missing else None

    def adopt_fingerprint(self, tagged: str | None, resource: str) -> None:
        """A resource an earlier try made keeps the fingerprint it was tagged with: code or inputs may have
        changed since, and the cache must not record it under what it is not (untagged: nothing recorded)."""
        if self._fingerprint is not None and tagged != self._fingerprint:
            self.log.info(
                "%s was started by an earlier try with fingerprint %s, not %s: it keeps its own.",
                resource,
                tagged,
                self._fingerprint,
            )
            self._fingerprint = tagged

    def lineage(self, context: Context, result: dict[str, Any]) -> tuple[list, list, dict]:
        """What the stage read and wrote (mlscale.aws.lineage datasets) and its details for the run facet."""
        return [], [], {}

    def _with_lineage(self, context: Context, result: dict[str, Any]) -> dict[str, Any]:
        try:
            inputs, outputs, details = self.lineage(context, result)
        except Exception as error:  # noqa: BLE001 - lineage is a report: it never fails the stage
            self.log.warning("No lineage for this stage: %s", error)
            return result
        if not inputs and not outputs:
            return result
        return {**result, "lineage": {"inputs": inputs, "outputs": outputs, "details": details}}

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The OpenLineage provider's hook: the stage's datasets and facets (mlscale.operators.lineage)."""
        from mlscale.operators.lineage import operator_lineage

        return operator_lineage(getattr(self, "_final", None))

    def reusing(self, context: Context, entry: dict[str, Any]) -> None:
        """Called on a cache hit, before the recorded result is returned (a stage links to the reused job)."""

    def fingerprint_tags(self) -> list[dict[str, str]]:
        """The tag that marks a job with the fingerprint of the stage that launched it."""
        return [{"Key": FINGERPRINT_TAG, "Value": self._fingerprint}] if self._fingerprint else []

    def failed(self, context: Context, event: dict[str, Any]) -> None:
        """A wait ended in failure (or could not describe the resource): raise with the reason."""
        raise AirflowException(failure_message(event))

    # -- helpers --------------------------------------------------------------------------------------------

    @cached_property
    def hook(self) -> Any:
        """AwsBaseOperator's hook (`aws_hook_class`), shared in this process (mlscale.aws.clients)."""
        return shared_hook(self.aws_hook_class, **self._hook_parameters)

    def aws_client(self, service: str) -> Any:
        """Another service's client on the stage's connection, region, verify and botocore config."""
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

        return shared_hook(AwsBaseHook, client_type=service, **self._hook_parameters).get_conn()

    def s3_hook(self) -> Any:
        """The provider's S3Hook on the stage's connection, looked up once per task run (the cache checks make
        several calls) and shared in the process."""
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        if getattr(self, "_s3", None) is None:
            self._s3 = shared_hook(S3Hook, **self._hook_parameters)
        return self._s3

    # -- the life ---------------------------------------------------------------------------------------------

    def _validate(self) -> None:
        """The spec and the poll interval (a template renders it to a string), before any AWS call."""
        if self.spec is not None:
            self.spec.validate()
        interval = self.poll_interval
        if isinstance(interval, str):
            interval = convert(interval, float, "poll_interval")
        require(
            isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval > 0,
            "poll_interval",
            "must be a number of seconds above 0",
            self.poll_interval,
        )
        self.poll_interval = float(interval)

    def _needed(self) -> bool:
        rendered = str(self.enabled).strip()  # a template renders to a string; "maybe" is refused, not enabled
        return rendered.lower() not in NONE and convert(rendered, bool, "enabled")

    def execute(self, context: Context) -> Any:
        if not self._needed():
            self.log.info("%s not needed this run: %s", self.task_id, self.skip_reason or "disabled")
            return self.not_needed()
        not_needed = self.before_start(context)
        if not_needed is not None:
            return not_needed
        self._validate()
        if self.cache_stage is not None:
            parts = self.cache_parts(context)
            if self.cache is not None:
                self.cache.validate(parts.names())
            self._fingerprint = self._compute_fingerprint(parts)
            if self._fingerprint:  # visible while it runs; and what a resumed try reads back
                context["ti"].xcom_push(key="fingerprint", value=self._fingerprint)
            if self._fingerprint and self.cache is not None and self.cache.enabled:
                reused = caching.reuse(self, context, self._fingerprint, self.cache)
                if reused is not None:
                    self._final = reused
                    return reused
        return self._drive(context, None)

    def _compute_fingerprint(self, parts: caching.CacheParts) -> str | None:
        try:
            key, inputs = caching.compute(self.cache_stage, parts, self.cache, self.s3_hook().get_conn())
        except ClientError as error:  # the stage can still run; it is just not cached
            self.log.warning("No stage fingerprint (its inputs could not be listed): %s", error)
            return None
        self.log.info(
            "Stage fingerprint %s (inputs: %s)", key, ", ".join(f"{n}={v[:12]}" for n, v in inputs.items()) or "none"
        )
        return key

    def execute_complete(
        self,
        context: Context,
        event: dict[str, Any] | None = None,
        recheck: bool = False,
        fingerprint: str | None = None,
    ) -> Any:
        """Where a deferred stage resumes (Airflow's and the Amazon provider's name for it)."""
        event = validate_execute_complete_event(event)
        if "status" not in event:
            raise AirflowException(f"The trigger returned no status: {event!r}")
        self._validate()  # a resumed task renders its spec again: convert the strings again
        if self.cache is not None:
            self.cache.validate()
        # what the stage was before it started, not what its inputs are now; `dag.test()` resumes with the
        # event alone (no defer kwargs), so the try's own XCom is the fallback (a deferral keeps its XComs)
        ti = context.get("ti")
        if fingerprint is None and self.cache_stage is not None and hasattr(ti, "xcom_pull"):
            fingerprint = ti.xcom_pull(task_ids=ti.task_id, key="fingerprint", map_indexes=ti.map_index)
        self._fingerprint = fingerprint
        return self._drive(context, None if recheck and event["status"] == "success" else event)

    # the method name tasks deferred by mlscale 0.2.0 stored in the metadata database: they resume through it
    resume = execute_complete

    def _drive(self, context: Context, settled: dict[str, Any] | None) -> Any:
        while True:
            if settled is not None and settled["status"] != "success":
                self.failed(context, settled)
                raise AirflowException(failure_message(settled))  # a `failed` that does not raise still fails
            outcome = self.advance(context, settled)
            if not isinstance(outcome, Wait):
                outcome = self._with_lineage(context, outcome)
                if self._fingerprint is not None:
                    outcome = caching.record(self, context, self._fingerprint, self.cache, outcome)
                self._final = outcome
                return outcome
            self._waiting = outcome
            if not self.wait_for_completion:
                result = self.submitted(context, outcome)
                self.log.info(
                    "Not waiting for %s %s (wait_for_completion=False).", outcome.kind.noun, outcome.resource_id
                )
                return result
            if self.deferrable:
                self.defer(
                    trigger=StageTrigger(
                        outcome.kind.name,
                        outcome.resource_id,
                        self.poll_interval,
                        outcome.stop_on_kill,
                        self.aws_conn_id,
                        self.region_name,
                        self.verify,
                        self.botocore_config,
                        next_poll_at=time.time() + float(self.poll_interval),
                    ),
                    method_name="execute_complete",
                    kwargs={"recheck": outcome.recheck, "fingerprint": self._fingerprint},
                )
            settled = self._wait_here(outcome)
            if outcome.recheck and settled["status"] == "success":
                settled = None

    def _wait_here(self, wait: Wait) -> dict[str, Any]:
        """Poll in the worker (`deferrable=False`), logging what the trigger would log."""
        watch = ResourceWatch(wait.kind, wait.resource_id, self.hook, interval=float(self.poll_interval))
        while True:
            description, lines = watch.poll()
            for line in lines:
                self.log.info(line)
            if wait.kind.settled(description):
                return wait.kind.event(wait.resource_id, description)
            time.sleep(float(self.poll_interval))

    def on_kill(self) -> None:
        wait = self._waiting
        if wait is None or not wait.stop_on_kill or wait.kind.stop is None:
            return
        try:
            wait.kind.stop(self.hook.conn, wait.resource_id)
            self.log.info("Stopped %s %s.", wait.kind.noun, wait.resource_id)
        except ClientError as error:  # already ended: nothing to stop
            self.log.info("%s %s not stopped: %s", wait.kind.noun, wait.resource_id, error)


def _template_values(obj: Any, depth: int = 0) -> list[Any]:
    """The values of an object's template fields, descending into nested objects that have their own."""
    if obj is None or depth > 4 or not hasattr(obj, "template_fields") or isinstance(obj, type):
        return []
    values = []
    for name in obj.template_fields:
        value = getattr(obj, name, None)
        values.append(value)
        nested = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
        for item in nested:
            values.extend(_template_values(item, depth + 1))
    return values
