"""One wait on one resource, a poll at a time: the describe call, the lines worth logging, settled or not.

The trigger (in a thread of the triggerer), a stage's own wait (`deferrable=False`) and the sensors' poke
all poll through this, so the log lines a user reads are the same whichever way the stage waits.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from mlscale.aws import errors
from mlscale.waits.kinds import ResourceKind
from mlscale.waits.log_budget import budget_for
from mlscale.waits.poller import poller_for

# A connection edited in the UI reaches the waits that share its hook within this many seconds.
SHARED_HOOK_SECONDS = 600.0
THROTTLED_BACKOFF_MAX = 30.0  # seconds between Describes while AWS throttles them


def _hook_class(service: str) -> tuple[type, dict]:
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    if service == "sagemaker":  # SageMakerHook: the job kinds' log tails use its helpers
        from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

        return SageMakerHook, {}
    return AwsBaseHook, {"client_type": service}


def hook_for(
    kind: ResourceKind,
    aws_conn_id: str | None,
    region_name: str | None = None,
    verify: bool | str | None = None,
    botocore_config: dict | None = None,
):
    """The provider's hook for the kind's service, made for this caller (a sensor's poke)."""
    hook_class, extra = _hook_class(kind.service)
    hook = hook_class(aws_conn_id=aws_conn_id, region_name=region_name, verify=verify, config=botocore_config, **extra)
    hook.mlscale_params = (aws_conn_id, region_name, verify, botocore_config)  # for the logs hook of the same wait
    return hook


def shared_hook(
    kind: ResourceKind,
    aws_conn_id: str | None,
    region_name: str | None = None,
    verify: bool | str | None = None,
    botocore_config: dict | None = None,
):
    """hook_for's hook, one per (service, connection, region, verify, config) in this process, its client made
    (the process's one hook cache, mlscale.aws.clients; the connection read again every SHARED_HOOK_SECONDS).

    A triggerer runs hundreds of waits: a hook each meant a boto3 client each, every one holding its own copy of
    the service model (several MB for SageMaker). boto3 clients are thread-safe, so the waits share them
    (https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html#multithreading-or-multiprocessing).
    Blocking (the connection is read): call it in a thread, never on the triggerer's event loop."""
    from mlscale.aws import clients

    hook_class, extra = _hook_class(kind.service)
    hook = clients.shared_hook(
        hook_class,
        recheck_seconds=SHARED_HOOK_SECONDS,
        aws_conn_id=aws_conn_id,
        region_name=region_name,
        verify=verify,
        config=botocore_config,
        **extra,
    )
    hook.mlscale_params = (aws_conn_id, region_name, verify, botocore_config)
    hook.conn  # noqa: B018 - the client, made now, in the caller's thread
    return hook


def shared_logs_hook(hook: Any):
    """The provider's AwsLogsHook on the same connection as `hook` (one of hook_for's), shared like shared_hook."""
    from airflow.providers.amazon.aws.hooks.logs import AwsLogsHook

    from mlscale.aws import clients

    params = getattr(hook, "mlscale_params", None)  # an operator's own hook has its connection's fields instead
    aws_conn_id, region_name, verify, botocore_config = params or (
        hook.aws_conn_id,
        hook._region_name,
        hook._verify,
        hook._config,
    )
    return clients.shared_hook(
        AwsLogsHook,
        recheck_seconds=SHARED_HOOK_SECONDS,
        aws_conn_id=aws_conn_id,
        region_name=region_name,
        verify=verify,
        config=botocore_config,
    )


def _key(service: str, aws_conn_id, region_name, verify, botocore_config) -> tuple:
    return (service, aws_conn_id, region_name, repr(verify), json.dumps(botocore_config, sort_keys=True, default=str))


def status_lines(kind: ResourceKind, description: dict, previous: dict | None) -> list[str]:
    """What changed since `previous`: training's secondary statuses (each transition from a Describe, the
    latest from a list summary), or the status itself."""
    name = description.get(kind.name_key, "")
    transitions = description.get("SecondaryStatusTransitions")
    if transitions is not None:
        before = (previous or {}).get("SecondaryStatusTransitions")
        if previous is not None and before is None:  # the wait had a list summary: its status was said already
            new = (
                transitions[-1:] if transitions and transitions[-1]["Status"] != previous.get("SecondaryStatus") else []
            )
        else:
            new = transitions[len(before or []) :]
        return [f"{name}: {t['Status']} - {t.get('StatusMessage', '')}" for t in new]
    secondary = description.get("SecondaryStatus")
    if secondary is not None:
        return [f"{name}: {secondary}"] if (previous or {}).get("SecondaryStatus") != secondary else []
    status = kind.status(description)
    if previous is None or kind.status(previous) != status:
        return [f"{kind.noun} {name}: {status}".strip()]
    return []


def hook_key(hook: Any) -> tuple:
    """The connection, region, verify and config a hook of hook_for's (or an operator's) talks to AWS with."""
    params = getattr(hook, "mlscale_params", None) or (hook.aws_conn_id, hook._region_name, hook._verify, hook._config)
    return _key("", *params)


class ResourceWatch:
    """Keeps what one wait needs between polls: the last answer, the log read positions, the progress line.

    The status comes from the process's shared Poller (mlscale.waits.poller), which asks AWS once per interval
    for every wait on the same kind and connection; a throttled Describe is asked again after a growing
    pause. The log lines are a report: their reads share the connection's LogBudget (round robin under
    CloudWatch Logs' quota) and a failed read is logged once and tried again at the next poll; only the
    resource's own status decides the wait. `full`: on settling, describe the resource in full (a sensor's
    XCom summary); otherwise a list summary may be the last answer (a trigger's event needs only the status
    and, for a failure, the reason, which is then described).
    """

    def __init__(
        self,
        kind: ResourceKind,
        resource_id: str,
        hook: Any,
        log_since_ms: int | None = None,
        interval: float = 30.0,
        full: bool = False,
    ):
        self.kind, self.resource_id, self.client = kind, resource_id, hook.conn
        self.interval, self.full = float(interval), full
        self.poller = poller_for(kind, hook_key(hook), self.client)
        self.budget = budget_for(hook_key(hook))
        self.previous: dict | None = None
        self.details: dict | None = None  # one full Describe, made when a job first logs (the progress line)
        self.tail_error: str | None = None
        self.tail = self.progress = None
        if kind.log_group:
            from mlscale.waits.job_logs import JobLogTail
            from mlscale.waits.progress import ProgressReporter

            self.tail = JobLogTail(hook, kind.log_group, resource_id, since_ms=log_since_ms)
            self.progress = ProgressReporter(kind.name_key, kind.status_key)
        elif kind.log_tail:
            self.tail = kind.log_tail(self.client, shared_logs_hook(hook).conn, resource_id, log_since_ms)

    def poll(self) -> tuple[dict, list[str]]:
        """(the resource's description, the lines to log); blocking: a trigger runs it in a thread."""
        description, lines = self._retrying(lambda: self.poller.describe(self.resource_id, self.interval))
        settled = self.kind.settled(description)
        if settled and (
            self.full
            or self.kind.reason(description) is None
            and self.kind.status(description) not in self.kind.succeeded
        ):
            description, said = self._retrying(lambda: self.kind.describe(self.client, self.resource_id))
            lines += said
        lines += status_lines(self.kind, description, self.previous)
        if self.tail is not None:
            new = self._tail_lines(description, lines)
            lines += new + (self.progress.update(self._detailed(description, new), new) if self.progress else [])
        self.previous = description
        if settled:
            self.poller.forget(self.resource_id)
            self.budget.forget(self)
        return description, lines

    def _detailed(self, description: dict, new_lines: list[str]) -> dict:
        """The description with what only a Describe has (metric definitions, hyperparameters: the progress
        line's), described once, when the job first logs."""
        if self.details is None and new_lines:
            self.details, _ = self._retrying(lambda: self.kind.describe(self.client, self.resource_id))
        return {**(self.details or {}), **description}

    def _retrying(self, describe) -> tuple[dict, list[str]]:
        """A describe, tried again while AWS throttles it (after botocore's own retries), backing off up to
        THROTTLED_BACKOFF_MAX seconds with jitter: a throttle never decides a wait, only the resource's status."""
        said, delay = [], 1.0
        while True:
            try:
                return describe(), said
            except Exception as error:  # noqa: BLE001 - only throttling is retried here; the rest is raised
                if not errors.throttled(error):
                    raise
                if not said:
                    said.append(
                        f"{self.kind.noun} {self.resource_id}: Describe throttled ({errors.code(error)}); "
                        "backing off and asking again"
                    )
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, THROTTLED_BACKOFF_MAX)

    def _tail_lines(self, description: dict, lines: list[str]) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        if not self.budget.take(self, self.tail.cost):
            return []  # not this wait's turn: its lines come at a later poll
        try:
            new = self.tail.poll(description)
        except (ClientError, BotoCoreError) as error:
            if self.tail_error is None:
                lines.append(f"Log lines paused (tried again at each poll): {type(error).__name__}: {error}")
            self.tail_error = str(error)
            return []
        self.tail_error = None
        return new
