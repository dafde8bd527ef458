"""The Amazon provider's hooks, shared within one process by everything that decides their client.

Every provider hook makes its own boto3 Session, and a Session's first client of a service loads that
service's model from disk: 0.1-0.3 s a client (SageMaker's model is several MB). A stage makes three or
four (its service, S3, the stage cache's checks), and `dag.test()` (`mlscale demo`) runs every task of a
run in one process: about 30 clients a run, a quarter of a cached re-run's wall time. Shared, each is made
once. boto3 clients are thread-safe
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/clients.html#multithreading-or-multiprocessing).

The key holds the hook's class and parameters, the connection as the hook would read it (a digest of its
URI: an edited connection gets a new hook) and the process's AWS_* environment (what boto3 reads where the
connection says nothing: credentials, endpoint URLs, the profile). Reading the connection is one lookup per
call: fine for a task; a triggerer's hundreds of waits trust their read for `recheck_seconds` instead
(mlscale.waits.watch.shared_hook).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from typing import Any

KEPT = 32  # hooks kept; the least recently used goes first
_hooks: OrderedDict[tuple, Any] = OrderedDict()
_digests: dict[str, tuple[float, str | None]] = {}  # connection id -> (when read, digest of its URI)
_lock = threading.Lock()


def _connection_digest(aws_conn_id: str | None, recheck_seconds: float = 0.0) -> str | None:
    from airflow.sdk import BaseHook
    from airflow.sdk.exceptions import AirflowNotFoundException

    if not aws_conn_id:
        return None
    with _lock:
        read_at, digest = _digests.get(aws_conn_id, (None, None))
    if read_at is not None and time.monotonic() - read_at < recheck_seconds:
        return digest
    try:
        digest = _digest(BaseHook.get_connection(aws_conn_id).get_uri())
    except AirflowNotFoundException:  # the hook then falls back to boto3's own configuration, as this does
        digest = None
    with _lock:
        _digests[aws_conn_id] = (time.monotonic(), digest)
    return digest


def _digest(value: Any) -> str:
    """The key holds no secret in the clear."""
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def shared_hook(hook_class: type, recheck_seconds: float = 0.0, **params: Any) -> Any:
    """`hook_class(**params)`, made once per process for the same connection and environment. The connection is
    read at each call, or once per `recheck_seconds`."""
    key = (
        hook_class.__module__,
        hook_class.__qualname__,
        json.dumps(params, sort_keys=True, default=str),
        _connection_digest(params.get("aws_conn_id"), recheck_seconds),
        _digest(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))),
    )
    with _lock:
        hook = _hooks.get(key)
        if hook is not None:
            _hooks.move_to_end(key)
            return hook
    hook = hook_class(**params)
    with _lock:
        hook = _hooks.setdefault(key, hook)  # another thread's, made meanwhile, wins
        while len(_hooks) > KEPT:
            _hooks.popitem(last=False)
    return hook
