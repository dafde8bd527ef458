"""Start an Athena query once per task run, and find it again on a retry.

StartQueryExecution is idempotent on its ClientRequestToken: the same token answers the query it started
and starts no other (https://docs.aws.amazon.com/athena/latest/APIReference/API_StartQueryExecution.html).
The token is a digest of the task run's identity (dag, task, run, map index) and an attempt number, so a
try killed while its query runs reattaches to that query, a try after a query that ended SUCCEEDED reuses
it, and only a FAILED or CANCELLED one leads to the next attempt, as a SageMaker job's name does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from mlscale.waits.kinds import ATHENA_QUERY


def client_token(context: Any, attempt: int, purpose: str, request: dict[str, Any]) -> str:
    """64 hex characters (Athena takes 32-128), the same for every try of this task run that sends this request.
    The request is part of it: Athena refuses a token sent again with other parameters, and a changed query
    is a new query."""
    ti = context["ti"]
    sent = json.dumps(request, sort_keys=True, default=str)
    identity = f"{ti.dag_id}|{ti.task_id}|{ti.run_id}|{getattr(ti, 'map_index', -1)}|{purpose}|{attempt}|{sent}"
    return hashlib.sha256(identity.encode()).hexdigest()


def start_or_reattach(
    athena,
    request: dict[str, Any],
    context: Any,
    purpose: str,
    log,
    first_attempt: int = 1,
    before_next_attempt: Callable[[str, int], None] | None = None,
) -> tuple[str, dict]:
    """The id and description of this task run's current query: one already started under this run's token
    (running or SUCCEEDED), else a new one. Attempts start at `first_attempt` (the newest the caller knows was
    started). `before_next_attempt(ended_query_id, next_attempt)` runs after a query ended FAILED or CANCELLED
    and before the next attempt starts."""
    attempt = first_attempt
    while True:
        token = client_token(context, attempt, purpose, request)
        query_id = athena.start_query_execution(**request, ClientRequestToken=token)["QueryExecutionId"]
        query = ATHENA_QUERY.describe(athena, query_id)
        state = ATHENA_QUERY.status(query)
        if state not in ATHENA_QUERY.failed:
            return query_id, query
        log.info("Athena query %s of this run ended %s: the next attempt gets a new token", query_id, state)
        attempt += 1
        if before_next_attempt is not None:
            before_next_attempt(query_id, attempt)
