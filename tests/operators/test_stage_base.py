"""StageOperator's life without AWS: validate on execute and on resume, wait or not, fail with the reason."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.sdk.exceptions import AirflowException, TaskDeferred

from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.errors import SpecError
from mlscale.waits.kinds import TRAINING


@dataclass
class CountSpec:
    count: int
    template_fields = ("count",)

    def validate(self) -> None:
        coerce_fields(self)


class CountingStage(StageOperator):
    aws_hook_class = AwsBaseHook

    def advance(self, context, settled):
        if settled is None:
            return Wait(TRAINING, "job-1")
        return {"count": self.spec.count, "after": settled["state"]}


def test_a_resumed_task_converts_its_rendered_spec_again():
    """The triggerer resumes a fresh task whose templates rendered to strings again (seen on the real stack)."""
    operator = CountingStage(task_id="count", spec=CountSpec("3"))
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({})
    assert deferred.value.trigger.kind == "training" and deferred.value.trigger.stop_on_kill is True
    # the next look at the job is a poll interval after this one
    assert time.time() < deferred.value.trigger.next_poll_at <= time.time() + operator.poll_interval
    resumed = CountingStage(task_id="count", spec=CountSpec("3"))
    event = {"status": "success", "kind": "training", "resource_id": "job-1", "state": "Completed", "reason": None}
    assert resumed.execute_complete({}, event) == {"count": 3, "after": "Completed"}


def test_no_wait_returns_what_a_sensor_needs_and_a_failed_event_names_the_reason():
    assert CountingStage(task_id="c", spec=CountSpec(1), wait_for_completion=False).execute({}) == {
        "kind": "training",
        "resource_id": "job-1",
    }
    failed = {"status": "failed", "kind": "training", "resource_id": "job-1", "state": "Failed", "reason": "OOM"}
    with pytest.raises(AirflowException, match="Training job job-1 failed: OOM"):
        CountingStage(task_id="c", spec=CountSpec(1)).execute_complete({}, failed)
    error = {
        "status": "error",
        "kind": "training",
        "resource_id": "job-1",
        "state": None,
        "reason": "EndpointConnectionError",
    }
    with pytest.raises(AirflowException, match="Waiting for training job job-1 failed: EndpointConnectionError"):
        CountingStage(task_id="c", spec=CountSpec(1)).execute_complete({}, error)
    assert CountingStage(task_id="c", spec=CountSpec(1)).multiple_outputs  # train.output["key"] works


def test_a_stage_resumes_in_execute_complete_and_a_task_deferred_as_resume_still_resumes():
    stage = CountingStage(task_id="c", spec=CountSpec(1))
    with pytest.raises(AirflowException, match="Trigger error: event is None"):  # the provider's own check
        stage.execute_complete({}, None)
    assert CountingStage.resume is CountingStage.execute_complete  # next_method "resume" in the database


def test_a_cached_stage_without_cache_parts_is_refused_when_its_class_is_defined():
    from mlscale.operators.stage import StageOperator

    with pytest.raises(TypeError, match="Half sets cache_stage 'half' but defines no cache_parts"):
        type("Half", (StageOperator,), {"cache_stage": "half", "advance": lambda self, context, settled: {}})


@pytest.mark.parametrize("interval", ["soon", "0", "-5", True])
def test_a_bad_poll_interval_fails_before_any_aws_call_naming_the_field(interval):
    operator = CountingStage(task_id="count", spec=CountSpec("3"), poll_interval=interval)
    with pytest.raises(SpecError, match="poll_interval"):
        operator.execute({})  # CountingStage's advance would defer: it never got there


def test_a_rendered_poll_interval_is_converted():
    operator = CountingStage(task_id="count", spec=CountSpec("3"), poll_interval="2")
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({})
    assert operator.poll_interval == 2.0 and deferred.value.trigger.poll_interval == 2.0
