"""Compute environment capacity: a job leaves RUNNABLE only when a compute environment of its queue has the vCPUs.

AWS Batch places a job on the first ENABLED compute environment of its queue (in `computeEnvironmentOrder`)
whose `maxvCpus` leaves room for all of the job's nodes; a job that fits nowhere stays RUNNABLE until
capacity frees (https://docs.aws.amazon.com/batch/latest/userguide/job_states.html). Unmanaged environments
have no maxvCpus: here they never run out.
"""

from __future__ import annotations

import threading
from typing import Any

_in_use: dict[str, int] = {}  # compute environment ARN -> vCPUs held by running jobs
_freed = threading.Condition()


def environments_of(queue: Any) -> list[Any]:
    """The queue's compute environments in the order it tries them."""
    by_arn = {env.arn: env for env in queue.environments}
    order = sorted(queue.env_order_json, key=lambda entry: int(entry.get("order", 0)))
    return [by_arn[entry["computeEnvironment"]] for entry in order if entry["computeEnvironment"] in by_arn] or list(
        queue.environments
    )


def _room(env: Any) -> float:
    if env.env_type == "UNMANAGED" or not env.compute_resources:
        return float("inf")
    return int(env.compute_resources.get("maxvCpus", 0)) - _in_use.get(env.arn, 0)


def can_run_multinode(env: Any) -> bool:
    """Multi-node parallel jobs run on managed On-Demand EC2 only: not SPOT, not UNMANAGED, not Fargate
    (https://docs.aws.amazon.com/batch/latest/userguide/mnp-ce.html)."""
    return env.env_type == "MANAGED" and (env.compute_resources or {}).get("type") == "EC2"


def acquire(
    queue: Any, vcpus: int, give_up: threading.Event, multinode: bool = False, wait_seconds: float = 0.5
) -> Any | None:
    """Block until an environment of `queue` has `vcpus` free and take them; None if `give_up` is set first."""
    with _freed:
        while not give_up.is_set():
            for env in environments_of(queue):
                if multinode and not can_run_multinode(env):
                    continue
                if (env.state or "ENABLED") == "ENABLED" and queue.state == "ENABLED" and _room(env) >= vcpus:
                    _in_use[env.arn] = _in_use.get(env.arn, 0) + vcpus
                    return env
            _freed.wait(wait_seconds)  # also woken by release
    return None


def release(env: Any, vcpus: int) -> None:
    with _freed:
        _in_use[env.arn] = max(0, _in_use.get(env.arn, 0) - vcpus)
        _freed.notify_all()


def reset() -> None:
    with _freed:
        _in_use.clear()
        _freed.notify_all()
