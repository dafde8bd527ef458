"""A kind of AWS resource described as data; mlscale.waits.kinds holds the table of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from mlscale.aws import errors

Client = Any  # a boto3 client of the kind's service


@dataclass(frozen=True)
class ResourceKind:
    name: str  # the registry key: "training", "endpoint", "fsx_task"
    noun: str  # for messages: "training job"
    service: str  # the boto3 client type
    describe: Callable[[Client, str], dict]
    status: Callable[[dict], str]
    succeeded: tuple[str, ...]
    failed: tuple[str, ...]
    reason: Callable[[dict], str | None] = lambda description: description.get("FailureReason")
    stop: Callable[[Client, str], None] | None = None  # what on_kill calls; None: the service has no stop
    not_found_codes: tuple[str, ...] = ("ResourceNotFound", "ResourceNotFoundException")
    log_group: str | None = None  # CloudWatch log group streamed into the task log while it waits
    # (the kind's client, a CloudWatch Logs client, resource_id, since_ms) -> a tail with poll(description), cost
    log_tail: Callable[..., Any] | None = None
    name_key: str = ""  # the describe answer's name field (progress lines)
    status_key: str = ""
    summary: Callable[[dict], dict] = lambda description: {}  # small JSON (a sensor's XCom)
    # How mlscale.waits.poller asks for many at once: a batch read of up to batch_size ids ({id: description,
    # None when not found}), or the list of what changed since a time ((summaries, the service's time, calls)).
    describe_many: Callable[[Client, list[str]], dict[str, dict | None]] | None = None
    batch_size: int = 1
    list_changed: Callable[[Client, Any], tuple[list[dict], Any, int]] | None = None

    def settled(self, description: dict) -> bool:
        return self.status(description) in self.succeeded + self.failed

    def describe_or_none(self, client: Client, resource_id: str) -> dict | None:
        try:
            return self.describe(client, resource_id)
        except ClientError as error:
            # SageMaker jobs and endpoints answer ValidationException ("Could not find ..."): mlscale.aws.errors
            if errors.not_found(error, (*self.not_found_codes, "ValidationException", "ValidationError")):
                return None
            raise

    def event(self, resource_id: str, description: dict) -> dict[str, Any]:
        """The trigger's event for a settled resource (also what an operator's own wait returns)."""
        status = self.status(description)
        return {
            "status": "success" if status in self.succeeded else "failed",
            "kind": self.name,
            "resource_id": resource_id,
            "state": status,
            "reason": self.reason(description),
        }
