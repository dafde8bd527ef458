"""One wait on one resource, a poll at a time: the describe call, the lines worth logging, settled or not.

The trigger (in a thread of the triggerer), a stage's own wait (`deferrable=False`) and the sensors' poke
all poll through this, so the log lines a user reads are the same whichever way the stage waits.
"""

from __future__ import annotations

import json
import random
import threading
import time
from typing import Any

from mlscale.hooks.resources import ResourceKind

# A connection edited in the UI reaches the waits that share its hook within this many seconds.
SHARED_HOOK_SECONDS = 600.0
THROTTLED_BACKOFF_MAX = 30.0  # seconds between Describes while AWS throttles them
_shared: dict[tuple, tuple[float, Any]] = {}
_shared_lock = threading.Lock()


def hook_for(kind: ResourceKind, aws_conn_id: str | None, region_name: str | None = None,
             verify: bool | str | None = None, botocore_config: dict | None = None):  # fmt: skip
    """The provider's hook for the kind's service (SageMakerHook, whose log helpers the job kinds use)."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook

    params = {"aws_conn_id": aws_conn_id, "region_name": region_name, "verify": verify, "config": botocore_config}
    if kind.service == "sagemaker":
        from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

        hook = SageMakerHook(**params)
    else:
        hook = AwsBaseHook(client_type=kind.service, **params)
    hook.mlscale_params = (aws_conn_id, region_name, verify, botocore_config)  # for the logs hook of the same wait
    return hook


def _shared_made(key: tuple, make) -> Any:
    with _shared_lock:  # held while a hook is made, so that each is made once; only worker threads take it
        made, hook = _shared.get(key, (0.0, None))
        if hook is None or time.monotonic() - made > SHARED_HOOK_SECONDS:
            hook = make()
            hook.conn  # noqa: B018 - the client, made now, under the lock
            _shared[key] = (time.monotonic(), hook)
    return hook


def _key(service: str, aws_conn_id, region_name, verify, botocore_config) -> tuple:
    return (service, aws_conn_id, region_name, repr(verify), json.dumps(botocore_config, sort_keys=True, default=str))


def shared_hook(kind: ResourceKind, aws_conn_id: str | None, region_name: str | None = None,
                verify: bool | str | None = None, botocore_config: dict | None = None):  # fmt: skip
    """hook_for's hook, one per (service, connection, region, verify, config) in this process, its client made.

    A triggerer runs hundreds of waits: a hook each meant a boto3 client each, every one holding its own copy of
    the service model (several MB for SageMaker). boto3 clients are thread-safe, so the waits share them
    (https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html#multithreading-or-multiprocessing).
    Blocking (the connection is read): call it in a thread, never on the triggerer's event loop."""
    return _shared_made(_key(kind.service, aws_conn_id, region_name, verify, botocore_config),
                        lambda: hook_for(kind, aws_conn_id, region_name, verify, botocore_config))  # fmt: skip


def shared_logs_hook(hook: Any):
    """The provider's AwsLogsHook on the same connection as `hook` (one of hook_for's), shared like shared_hook."""
    from airflow.providers.amazon.aws.hooks.logs import AwsLogsHook

    params = getattr(hook, "mlscale_params", None)  # an operator's own hook has its connection's fields instead
    aws_conn_id, region_name, verify, botocore_config = params or (
        hook.aws_conn_id, hook._region_name, hook._verify, hook._config)  # fmt: skip
    return _shared_made(_key("logs", aws_conn_id, region_name, verify, botocore_config),
                        lambda: AwsLogsHook(aws_conn_id=aws_conn_id, region_name=region_name, verify=verify,
                                            config=botocore_config))  # fmt: skip


def status_lines(kind: ResourceKind, description: dict, previous: dict | None) -> list[str]:
    """What changed since `previous`: training's secondary statuses, or the status itself."""
    name = description.get(kind.name_key, "")
    transitions = description.get("SecondaryStatusTransitions")
    if transitions is not None:
        seen = len((previous or {}).get("SecondaryStatusTransitions") or [])
        return [f"{name}: {t['Status']} - {t.get('StatusMessage', '')}" for t in transitions[seen:]]
    status = kind.status(description)
    if previous is None or kind.status(previous) != status:
        return [f"{kind.noun} {name}: {status}".strip()]
    return []


class ResourceWatch:
    """Keeps what one wait needs between polls: the last answer, the log read positions, the progress line.

    The log lines are a report: a failed read of them (CloudWatch Logs throttles DescribeLogStreams and
    GetLogEvents at tens of calls a second per account, which a triggerer's hundreds of waits can exceed) is
    logged once and tried again at the next poll; only the resource's own Describe decides the wait, and a
    throttled Describe is asked again after a growing pause (the trigger, the sensors' poke and the
    operators' `deferrable=False` waits all poll through here).
    """

    def __init__(self, kind: ResourceKind, resource_id: str, hook: Any, log_since_ms: int | None = None):
        self.kind, self.resource_id, self.client = kind, resource_id, hook.conn
        self.previous: dict | None = None
        self.tail_error: str | None = None
        self.tail = self.progress = None
        if kind.log_group:
            from mlscale.hooks.job_logs import JobLogTail
            from mlscale.hooks.progress import ProgressReporter

            self.tail = JobLogTail(hook, kind.log_group, resource_id, since_ms=log_since_ms)
            self.progress = ProgressReporter(kind.name_key, kind.status_key)
        elif kind.log_tail:
            self.tail = kind.log_tail(hook, resource_id, log_since_ms)

    def poll(self) -> tuple[dict, list[str]]:
        """(the resource's description, the lines to log); blocking: a trigger runs it in a thread."""
        description, lines = self._describe()
        lines += status_lines(self.kind, description, self.previous)
        if self.tail is not None:
            new = self._tail_lines(description, lines)
            lines += new + (self.progress.update(description, new) if self.progress else [])
        self.previous = description
        return description, lines

    def _describe(self) -> tuple[dict, list[str]]:
        """The Describe, tried again while AWS throttles it (after botocore's own retries), backing off up to
        THROTTLED_BACKOFF_MAX seconds with jitter: a throttle never decides a wait, only the resource's status."""
        from mlscale.hooks import errors

        said, delay = [], 1.0
        while True:
            try:
                return self.kind.describe(self.client, self.resource_id), said
            except Exception as error:  # noqa: BLE001 - only throttling is retried here; the rest is raised
                if not errors.throttled(error):
                    raise
                if not said:
                    said.append(f"{self.kind.noun} {self.resource_id}: Describe throttled ({errors.code(error)}); "
                                "backing off and asking again")  # fmt: skip
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, THROTTLED_BACKOFF_MAX)

    def _tail_lines(self, description: dict, lines: list[str]) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            new = self.tail.poll(description)
        except (ClientError, BotoCoreError) as error:
            if self.tail_error is None:
                lines.append(f"Log lines paused (tried again at each poll): {type(error).__name__}: {error}")
            self.tail_error = str(error)
            return []
        self.tail_error = None
        return new
