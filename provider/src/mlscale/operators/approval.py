"""A person at the gate: a model package that passed the automatic checks waits for Approve or Reject in the UI.

Airflow 3's human-in-the-loop ApprovalOperator (the standard provider's) asks; this one says what is being
approved (the evaluation's metrics and reasons, a link to the mlscale run view) and writes the answer to the
model registry: Approve -> the package becomes Approved and deployment goes on; Reject -> Rejected and the
deployment tasks are skipped; no answer before the response timeout -> the package stays
PendingManualApproval and deployment is skipped (nobody approved it). A package the gate already approved
(automatic mode) goes straight through: nobody is asked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from airflow.providers.standard.operators.hitl import ApprovalOperator, HITLOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

PENDING = "PendingManualApproval"
XCOM_RETURN_KEY = "return_value"


class ModelApprovalOperator(ApprovalOperator):
    """Ask a person to approve a registered model package (PendingManualApproval) before it is deployed.

    :param model_package_arn: the package the evaluation registered (`evaluate.output["model_package_arn"]`).
    :param evaluation: the evaluation's XCom (metrics, reasons), shown to the person who decides.
    :param response_timeout_minutes: how long to wait for an answer (templated; default a day).
    :param aws_conn_id: the connection the model registry is reached on.

    XCom: `decision` (Approved, Rejected or PendingManualApproval), `model_package_arn`, `responded_by`.
    """

    template_fields: Sequence[str] = (
        *ApprovalOperator.template_fields,
        "model_package_arn",
        "evaluation",
        "response_timeout_minutes",
    )
    ui_color = "#fff2cc"

    def __init__(
        self,
        *,
        model_package_arn: str,
        evaluation: dict | None = None,
        response_timeout_minutes: int | str = 24 * 60,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        **kwargs: Any,
    ):
        kwargs.setdefault("subject", "Deploy this model?")
        super().__init__(**kwargs)
        self.model_package_arn, self.evaluation = model_package_arn, evaluation
        self.response_timeout_minutes = response_timeout_minutes
        self.aws_conn_id, self.region_name = aws_conn_id, region_name

    def _sagemaker(self):
        from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

        from mlscale.aws.clients import shared_hook

        return shared_hook(SageMakerHook, aws_conn_id=self.aws_conn_id, region_name=self.region_name).conn

    def execute(self, context: Context) -> Any:
        from mlscale.specs.coerce import convert
        from mlscale.specs.rules import in_range

        minutes = self.response_timeout_minutes  # checked before any AWS call
        minutes = convert(minutes, int, "response_timeout_minutes") if isinstance(minutes, str) else minutes
        in_range(minutes, "response_timeout_minutes", 1, 7 * 24 * 60)
        status = self._sagemaker().describe_model_package(ModelPackageName=self.model_package_arn)[
            "ModelApprovalStatus"
        ]
        if status != PENDING:
            self.log.info("Model package %s is %s: nobody needs to approve it.", self.model_package_arn, status)
            return self._result(status, None)
        self.response_timeout = timedelta(minutes=minutes)
        self.subject = f"{self.subject} ({self.model_package_arn.split('model-package/', 1)[-1]})"
        self.body = self._body(context)
        return super().execute(context)

    def _body(self, context: Context) -> str:
        evaluation = self.evaluation if isinstance(self.evaluation, dict) else json.loads(self.evaluation or "{}")
        metrics = evaluation.get("metrics") or {}
        ti = context["ti"]
        lines = [
            f"**Model package** `{self.model_package_arn}` passed the automatic checks and waits for a person.",
            "",
            "| metric | value |",
            "|---|---|",
        ]
        lines += [
            f"| {name} | {value} |" for name, value in sorted(metrics.items()) if not isinstance(value, (dict, list))
        ]
        lines += ["", *(f"- {reason}" for reason in evaluation.get("reasons") or [])]
        run_view = f"/mlscale/run?{urlencode({'dag_id': ti.dag_id, 'run_id': ti.run_id})}"
        lines += [
            "",
            f"[The run in the mlscale run view]({run_view})",
            "",
            f"Approve: the package becomes Approved and is deployed. Reject: it becomes Rejected. "
            f"No answer within {self.response_timeout_minutes} minutes: it stays pending and nothing is deployed.",
        ]
        return "\n".join(lines)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        if "error" in event and event.get("error_type") == "timeout":
            self.log.warning(
                "No answer within %s minutes: %s stays %s; deployment is skipped.",
                self.response_timeout_minutes,
                self.model_package_arn,
                PENDING,
            )
            return self._skip_deployment(context, self._result(PENDING, None))
        answer = HITLOperator.execute_complete(self, context=context, event=event)  # checks the answer
        approved = answer["chosen_options"][0] == self.APPROVE
        status = "Approved" if approved else "Rejected"
        who = (answer.get("responded_by_user") or {}).get("name") or "unknown"
        ti = context["ti"]
        self._sagemaker().update_model_package(
            ModelPackageArn=self.model_package_arn,
            ModelApprovalStatus=status,
            ApprovalDescription=f"{status} by {who} in Airflow ({ti.dag_id} / {ti.run_id})"[:1024],
        )
        self.log.info("Model package %s: %s by %s.", self.model_package_arn, status, who)
        result = self._result(status, who)
        return result if approved else self._skip_deployment(context, result)

    def _skip_deployment(self, context: Context, result: dict[str, Any]) -> dict[str, Any]:
        """Skip the tasks after this one. Airflow's skip() ends the task (it raises), so the XCom goes first."""
        context["ti"].xcom_push(key=XCOM_RETURN_KEY, value=result)
        downstream = [t for t in context["task"].get_direct_relatives(upstream=False) if not t.is_teardown]
        if downstream:
            self.skip(ti=context["ti"], tasks=downstream)
        return result

    def _result(self, decision: str, who: str | None) -> dict[str, Any]:
        return {"decision": decision, "model_package_arn": self.model_package_arn, "responded_by": who}
