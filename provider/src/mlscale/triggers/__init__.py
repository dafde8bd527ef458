"""Triggers that wait for AWS resources in Airflow's triggerer."""

from __future__ import annotations

import asyncio
import time

# Airflow 3.3 fails a resumed task when the executor's event for its deferral exit is processed after the
# resumed try has started (apache/airflow#72716, open; seen here in a backfill: a 5 s processing job failed
# its task). A trigger's first event therefore waits ([mlscale] first_event_delay, 15 s) until the scheduler
# has long drained the deferral's exit. `dag.test()` has no executor and no such race: the demo sets it to 0,
# and so does `mlscale airflow`, whose scheduler carries the fix (mlscale_emulator.local_scheduler).


def first_event_delay() -> float:
    from mlscale.settings import setting

    return float(setting("first_event_delay"))


async def hold_first_event(started: float, delay: float) -> None:
    """Sleep until `delay` seconds after `started` (time.monotonic() when the trigger began)."""
    await asyncio.sleep(max(0.0, started + delay - time.monotonic()))
