"""ModelApprovalOperator against the emulator's model registry: ask only when pending; Approve, Reject, timeout."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from airflow.providers.common.compat.sdk import DownstreamTasksSkipped
from airflow.sdk import DAG
from airflow.sdk.exceptions import TaskAwaitingInput

from mlscale.operators import ModelApprovalOperator
from tests.operators.test_training_operator import FakeTI

pytestmark = pytest.mark.emulator
EVALUATION = {
    "metrics": {"accuracy": 0.981, "macro_f1": 0.979, "records": 7000},
    "reasons": ["accuracy 0.9810 meets the threshold 0.9000"],
}


def package(clients, status: str) -> str:
    group = f"approval-{uuid.uuid4().hex[:6]}"
    clients["sagemaker"].create_model_package_group(ModelPackageGroupName=group)
    return clients["sagemaker"].create_model_package(
        ModelPackageGroupName=group,
        ModelApprovalStatus=status,
        InferenceSpecification={
            "Containers": [{"Image": "pytorch-inference:2", "ModelDataUrl": "s3://b/m.tar.gz"}],
            "SupportedContentTypes": ["application/json"],
            "SupportedResponseMIMETypes": ["application/json"],
        },
    )["ModelPackageArn"]


def status_of(clients, arn: str) -> str:
    return clients["sagemaker"].describe_model_package(ModelPackageName=arn)["ModelApprovalStatus"]


def approval_task(arn: str):
    """The approve task with a deployment task after it, as in the pipeline."""
    from airflow.providers.standard.operators.empty import EmptyOperator

    with DAG(dag_id=f"approval_{uuid.uuid4().hex[:6]}", schedule=None):
        approve = ModelApprovalOperator(
            task_id="approve", model_package_arn=arn, evaluation=EVALUATION, response_timeout_minutes="30"
        )
        approve >> EmptyOperator(task_id="deploy")
    skipped = []

    def skip(ti, tasks):  # as Airflow's: it ends the task
        skipped.extend(t.task_id for t in tasks)
        raise DownstreamTasksSkipped(tasks=[t.task_id for t in tasks])

    approve.skip = skip
    ti = FakeTI("approve")
    ti.id = uuid.uuid4()
    return approve, {"ti": ti, "task_instance": ti, "task": approve}, skipped


def answer(option: str) -> dict:
    return {
        "chosen_options": [option],
        "params_input": {},
        "responded_at": datetime.now(UTC),
        "responded_by_user": {"id": "ml-lead", "name": "ml-lead"},
    }


def test_an_approved_package_goes_through_without_asking(clients):
    arn = package(clients, "Approved")
    approve, context, skipped = approval_task(arn)
    assert approve.execute(context) == {"decision": "Approved", "model_package_arn": arn, "responded_by": None}
    assert skipped == []


def test_a_pending_package_asks_with_the_evaluation_and_the_run_view(clients, monkeypatch):
    from airflow.providers.standard.operators import hitl

    arn = package(clients, "PendingManualApproval")
    approve, context, _ = approval_task(arn)
    asked = {}
    monkeypatch.setattr(hitl, "upsert_hitl_detail", lambda **request: asked.update(request))
    with pytest.raises(TaskAwaitingInput) as waiting:
        approve.execute(context)
    assert waiting.value.timeout.total_seconds() == 30 * 60
    assert asked["options"] == ["Approve", "Reject"] and asked["subject"].startswith("Deploy this model? (approval-")
    assert "| accuracy | 0.981 |" in asked["body"] and "meets the threshold" in asked["body"]
    assert "/mlscale/run?dag_id=operator_tests&run_id=manual__2026-12-01T00%3A00%3A00%2B00%3A00" in asked["body"]


def test_a_bad_timeout_is_refused_before_any_aws_call(monkeypatch):
    from mlscale.specs import SpecError

    approve, context, _ = approval_task("arn:aws:sagemaker:us-east-1:123456789012:model-package/g/1")
    approve.response_timeout_minutes = "0"
    monkeypatch.setattr(ModelApprovalOperator, "_sagemaker", lambda self: pytest.fail("an AWS call was made"))
    with pytest.raises(SpecError, match="response_timeout_minutes: must be an integer from 1 to 10080"):
        approve.execute(context)


def test_approve_registers_approved_and_the_deployment_goes_on(clients):
    arn = package(clients, "PendingManualApproval")
    approve, context, skipped = approval_task(arn)
    result = approve.execute_complete(context, answer("Approve"))
    assert result == {"decision": "Approved", "model_package_arn": arn, "responded_by": "ml-lead"}
    assert status_of(clients, arn) == "Approved" and skipped == []
    described = clients["sagemaker"].describe_model_package(ModelPackageName=arn)
    assert described["ApprovalDescription"].startswith("Approved by ml-lead in Airflow (operator_tests / ")


def test_reject_registers_rejected_and_skips_the_deployment(clients):
    arn = package(clients, "PendingManualApproval")
    approve, context, skipped = approval_task(arn)
    with pytest.raises(DownstreamTasksSkipped):
        approve.execute_complete(context, answer("Reject"))
    assert status_of(clients, arn) == "Rejected" and skipped == ["deploy"]
    assert context["ti"].pushed["return_value"]["decision"] == "Rejected"  # said before the skip ends the task


def test_no_answer_in_time_leaves_it_pending_and_deploys_nothing(clients):
    arn = package(clients, "PendingManualApproval")
    approve, context, skipped = approval_task(arn)
    with pytest.raises(DownstreamTasksSkipped):
        approve.execute_complete(context, {"error": "Response timeout", "error_type": "timeout"})
    assert context["ti"].pushed["return_value"]["decision"] == "PendingManualApproval"
    assert status_of(clients, arn) == "PendingManualApproval" and skipped == ["deploy"]
