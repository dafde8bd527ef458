"""Triggers that wait for AWS resources in Airflow's triggerer."""

from __future__ import annotations

import asyncio
import time

# Airflow 3.3 fails a resumed task when the executor's event for its deferral exit is processed after the
# resumed try has started (apache/airflow#72716, open; seen here in a backfill: a 5 s processing job failed
# its task). A trigger's first event therefore waits until the scheduler has long drained the deferral's exit.
# `dag.test()` has no executor and no such race: the demo sets the hold to 0.
FIRST_EVENT_AFTER_SECONDS = 15.0


async def hold_first_event(started: float) -> None:
    """Sleep until FIRST_EVENT_AFTER_SECONDS after `started` (time.monotonic() when the trigger began)."""
    await asyncio.sleep(max(0.0, started + FIRST_EVENT_AFTER_SECONDS - time.monotonic()))
