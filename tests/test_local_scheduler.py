"""The local stack's scheduler drops the stale executor SUCCESS of a deferral once the resumed try runs
(apache/airflow#72716), and nothing else: an external kill of a running task must still fail it."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from sqlalchemy import create_engine, insert
from sqlalchemy.orm import Session


@pytest.fixture
def session():
    from airflow.models.base import Base
    from airflow.utils.db import import_all_models

    import_all_models()
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine, tables=[Base.metadata.tables["task_instance"]])
    with Session(engine) as session:
        yield session


def add_task(session, task_id: str, state: str, next_method: str | None, try_number: int = 1):
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.taskinstancekey import TaskInstanceKey

    session.execute(
        insert(TaskInstance.__table__).values(
            id=uuid.uuid4(),
            dag_id="d",
            task_id=task_id,
            run_id="r",
            map_index=-1,
            try_number=try_number,
            state=state,
            next_method=next_method,
            pool="default_pool",
        )
    )
    return TaskInstanceKey("d", task_id, "r", try_number, -1)


def test_only_a_success_of_a_running_resumed_try_is_dropped(session):
    from mlscale_emulator.local_scheduler import drop_stale_defer_exits

    resumed = add_task(session, "resumed", "running", "resume")
    killed = add_task(session, "killed", "running", None)  # never deferred: an external kill, Airflow fails it
    deferred = add_task(session, "deferred", "deferred", "resume")  # the usual order: the exit drained first
    failed = add_task(session, "failed_resumed", "running", "resume")
    queued = add_task(session, "queued_resumed", "queued", "resume")
    done = add_task(session, "done", "success", "resume")  # the resumed try's own exit: Airflow handles it
    executor = SimpleNamespace(
        event_buffer={
            resumed: ("success", None),
            killed: ("success", None),
            deferred: ("success", None),
            failed: ("failed", None),
            queued: ("success", None),
            done: ("success", None),
        }
    )
    assert drop_stale_defer_exits(executor, session) == 2
    assert set(executor.event_buffer) == {killed, deferred, failed, done}
    assert drop_stale_defer_exits(SimpleNamespace(event_buffer={}), session) == 0


def test_an_older_try_of_a_resumed_task_is_not_dropped(session):
    from airflow.models.taskinstancekey import TaskInstanceKey

    from mlscale_emulator.local_scheduler import drop_stale_defer_exits

    add_task(session, "retried", "running", "resume", try_number=2)
    older = TaskInstanceKey("d", "retried", "r", 1, -1)
    executor = SimpleNamespace(event_buffer={older: ("success", None)})
    assert drop_stale_defer_exits(executor, session) == 0 and older in executor.event_buffer


def test_install_wraps_the_scheduler_once(monkeypatch):
    from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

    from mlscale_emulator import local_scheduler

    calls = []
    monkeypatch.setattr(
        SchedulerJobRunner, "_process_executor_events", lambda self, executor, session: calls.append(1) or 7
    )
    monkeypatch.setattr(local_scheduler, "drop_stale_defer_exits", lambda executor, session: calls.append(0))
    local_scheduler.install()
    local_scheduler.install()
    assert SchedulerJobRunner._process_executor_events(None, executor="e", session="s") == 7
    assert calls == [0, 1]
