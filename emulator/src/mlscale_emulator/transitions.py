"""Each emulated resource's allowed status transitions, one table per kind, from the service's documentation.

A model's status attribute declared as `Status(TABLE)` checks every change once the model is armed (its
constructor done: moto's constructors set their own first values): a change the table does not list raises
IllegalTransition. That is an emulator bug, never a user error, and a test that drives the resource sees
it: the resource fails with it as the reason, or stops moving. Records kept as dicts (Greengrass
deployments) move with `move`; Athena and Glue runs (moto's ManagedState owns their `status`) with `check`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

Table = dict[str | None, tuple[str, ...]]

# CreateTrainingJob / CreateProcessingJob / CreateTransformJob: InProgress, then Stopping on StopXxxJob;
# Failed from Stopping covers a job that ran when the emulator stopped (mlscale_emulator.state).
SAGEMAKER_JOB: Table = {
    "InProgress": ("Completed", "Failed", "Stopping", "Stopped"),
    "Stopping": ("Stopped", "Failed", "Completed"),
}
COMPILATION_JOB: Table = {
    "INPROGRESS": ("COMPLETED", "FAILED", "STOPPING", "STOPPED"),
    "STARTING": ("INPROGRESS", "FAILED", "STOPPING"),
    "STOPPING": ("STOPPED", "FAILED"),
}
# DescribeEndpoint's EndpointStatus; an update that fails or rolls back ends InService on the old config.
ENDPOINT: Table = {
    "Creating": ("InService", "Failed", "Deleting"),
    "InService": ("Updating", "SystemUpdating", "Deleting", "OutOfService"),
    "Updating": ("InService", "RollingBack", "Failed", "SystemUpdating"),
    "RollingBack": ("InService", "Failed"),
    "SystemUpdating": ("InService", "Failed"),
    "OutOfService": ("InService", "Deleting"),
    "Failed": ("Deleting",),
}
FSX_FILE_SYSTEM: Table = {
    "CREATING": ("AVAILABLE", "FAILED"),
    "AVAILABLE": ("DELETING", "UPDATING"),
    "UPDATING": ("AVAILABLE",),
}
FSX_ASSOCIATION: Table = {"CREATING": ("AVAILABLE", "FAILED"), "AVAILABLE": ("DELETING",)}
FSX_TASK: Table = {
    "PENDING": ("EXECUTING", "CANCELED", "FAILED"),
    "EXECUTING": ("SUCCEEDED", "FAILED", "CANCELED", "CANCELING"),
    "CANCELING": ("CANCELED",),
}
GREENGRASS_DEPLOYMENT: Table = {"ACTIVE": ("COMPLETED", "CANCELED", "FAILED", "INACTIVE")}
ATHENA_QUERY: Table = {"QUEUED": ("RUNNING", "FAILED", "CANCELLED"), "RUNNING": ("SUCCEEDED", "FAILED", "CANCELLED")}
GLUE_JOB_RUN: Table = {
    "STARTING": ("RUNNING", "FAILED", "STOPPING"),
    "RUNNING": ("SUCCEEDED", "FAILED", "TIMEOUT", "STOPPING"),
    "STOPPING": ("STOPPED",),
}
# EMR Serverless job runs (https://docs.aws.amazon.com/emr/latest/EMR-Serverless-UserGuide/job-states.html):
# CancelJobRun moves any state before an end to CANCELLING.
EMR_SERVERLESS_JOB_RUN: Table = {
    "SUBMITTED": ("PENDING", "SCHEDULED", "FAILED", "CANCELLING"),
    "PENDING": ("SCHEDULED", "FAILED", "CANCELLING"),
    "SCHEDULED": ("RUNNING", "FAILED", "CANCELLING"),
    "RUNNING": ("SUCCESS", "FAILED", "CANCELLING"),
    "CANCELLING": ("CANCELLED", "FAILED"),
}
# AWS Batch's job states (https://docs.aws.amazon.com/batch/latest/userguide/job_states.html); a failed attempt
# that its retryStrategy retries goes back to RUNNABLE (from STARTING: its container could not start);
# CancelJob and TerminateJob end any state FAILED.
BATCH_JOB: Table = {
    "SUBMITTED": ("PENDING", "FAILED"),
    "PENDING": ("RUNNABLE", "FAILED"),
    "RUNNABLE": ("STARTING", "FAILED"),
    "STARTING": ("RUNNING", "FAILED", "RUNNABLE"),
    "RUNNING": ("SUCCEEDED", "FAILED", "RUNNABLE"),
}


class IllegalTransition(RuntimeError):
    """An emulator bug: a resource moved between statuses its service never moves between."""


def check(table: Table, what: str, current: str | None, new: str) -> None:
    if new != current and new not in table.get(current, ()):
        raise IllegalTransition(
            f"{what}: {current} -> {new} is not a transition of its service "
            f"(allowed from {current}: {', '.join(table.get(current, ())) or 'none'})"
        )


class Status:
    """A status attribute checked against its table on every change, once the model is armed."""

    def __init__(self, table: Table):
        self.table = table

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, f"_{name}"

    def __get__(self, model: Any, owner: type | None = None) -> Any:
        if model is None:
            return self
        try:
            return model.__dict__[self.slot]
        except KeyError:
            raise AttributeError(self.name) from None  # not set yet: getattr(model, name, default) still works

    def __set__(self, model: Any, value: str) -> None:
        if model.__dict__.get("_status_armed"):
            current = model.__dict__.get(self.slot)
            check(self.table, f"{type(model).__name__}.{self.name}", current, value)
            if value != current and hasattr(model, "last_modified_time"):
                # what List*'s LastModifiedTimeAfter filters on: a status change is a modification
                model.last_modified_time = datetime.now(UTC)
        model.__dict__[self.slot] = value


def arm(model: Any) -> None:
    """From now on every status change of this model is checked (call at the end of its constructor)."""
    model.__dict__["_status_armed"] = True


def move(record: dict, key: str, new: str, table: Table, what: str) -> None:
    """A status change of a record kept as a dict, checked like a Status attribute."""
    check(table, what, record.get(key), new)
    record[key] = new
