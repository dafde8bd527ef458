"""The local stack's scheduler: Airflow's, with the fix for apache/airflow#72716 until a release carries it.

A deferring task's worker exits cleanly and the executor reports SUCCESS for that try. When the trigger fires
at once (an emulator job of a second or two), the resumed try can be RUNNING before the scheduler drains that
stale SUCCESS, and Airflow 3.3 fails the task ("state mismatch"). Airflow already ignores the event while the
resumed try is SCHEDULED, or QUEUED while the executor still tracks it (apache/airflow#66431, #68741); this
drops it while the resumed try is SCHEDULED, QUEUED or RUNNING with `next_method` still set, as the open
upstream fix (apache/airflow#72767) does for RUNNING: a same-try SUCCESS for a try that has not finished
can only be the deferral's exit. With it, `mlscale airflow` sets the stage
triggers' first-event delay ([mlscale] first_event_delay) to 0.

Run as `python -m mlscale_emulator.local_scheduler <airflow scheduler arguments>`.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)


def drop_stale_defer_exits(executor, session) -> int:
    """Remove from the executor's event buffer each SUCCESS whose try is a resumed deferral not yet finished."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskinstancekey import TaskInstanceKey
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import select

    successes = [
        key
        for key, (state, _) in list(executor.event_buffer.items())
        if isinstance(key, TaskInstanceKey) and state == TaskInstanceState.SUCCESS
    ]
    if not successes:
        return 0
    ti = TaskInstance
    resumed = set(
        session.execute(
            select(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number).where(
                ti.filter_for_tis(successes),
                ti.next_method.is_not(None),
                ti.state.in_([TaskInstanceState.SCHEDULED, TaskInstanceState.QUEUED, TaskInstanceState.RUNNING]),
            )
        ).tuples()
    )
    dropped = 0
    for key in successes:
        if (key.dag_id, key.task_id, key.run_id, key.map_index, key.try_number) in resumed:
            executor.event_buffer.pop(key, None)
            log.info(
                "Ignoring the executor's SUCCESS from %s's deferral: its resumed try has not finished "
                "(apache/airflow#72716)",
                key,
            )
            dropped += 1
    return dropped


def install() -> None:
    """Wrap the scheduler's executor-event processing with drop_stale_defer_exits."""
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

    original = SchedulerJobRunner._process_executor_events
    if getattr(original, "drops_stale_defer_exits", False):
        return

    def _process_executor_events(self, executor, session):
        drop_stale_defer_exits(executor, session)
        return original(self, executor, session)

    _process_executor_events.drops_stale_defer_exits = True
    SchedulerJobRunner._process_executor_events = _process_executor_events


def main(argv: list[str]) -> None:
    from airflow.__main__ import main as airflow_main

    install()
    sys.argv = ["airflow", *argv]
    airflow_main()


if __name__ == "__main__":
    main(sys.argv[1:])
