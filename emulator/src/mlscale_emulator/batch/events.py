"""Batch job state changes as EventBridge events, and EventBridge rules that deliver them to SNS topics.

AWS Batch sends a `Batch Job State Change` event (source `aws.batch`, the detail being DescribeJobs' answer)
to the default event bus on each change (https://docs.aws.amazon.com/batch/latest/userguide/batch_cwe_events.html);
a rule on it with an SNS target is how a cluster's activity reaches people. moto's rules deliver to SQS,
CloudWatch Logs and other buses but not to SNS: delivery to SNS topics is added here.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from moto.events import models as events_models

log = logging.getLogger(__name__)
SOURCE, DETAIL_TYPE = "aws.batch", "Batch Job State Change"


def job_state_change(job: Any, region: str) -> None:
    """Put the job's state change on its account's default event bus (never fails the job)."""
    try:
        backend = events_models.events_backends[job.backend.account_id][region]
        backend.put_events(
            [
                {
                    "Source": SOURCE,
                    "DetailType": DETAIL_TYPE,
                    "Resources": [job.arn],
                    "Detail": json.dumps(job.describe(), default=str),
                }
            ]
        )
    except Exception:  # noqa: BLE001 - a notification problem must not change the job's outcome
        log.exception("batch job %s: its state change event was not delivered", job.job_id)


def _send_to_targets(self, original_event: dict[str, Any], transform_input: bool = True) -> None:
    """moto's delivery, with SNS topic targets (the event as the message, as EventBridge sends it) added."""
    from moto.sns.models import sns_backends
    from moto.utilities.arns import parse_arn

    sns_targets = [t for t in self.targets if parse_arn(t["Arn"]).service == "sns"]
    if sns_targets and self.event_pattern.matches_event(original_event):
        for target in sns_targets:
            arn = parse_arn(target["Arn"])
            sns_backends[arn.account][arn.region].publish(
                message=json.dumps(original_event, default=str), arn=target["Arn"]
            )
    others = [t for t in self.targets if t not in sns_targets]
    if others:  # on a shallow copy: the rule itself is shared by the server's threads
        rest = copy.copy(self)
        rest.targets = others
        _moto_send_to_targets(rest, original_event, transform_input)


_moto_send_to_targets = events_models.Rule.send_to_targets


def install() -> None:
    events_models.Rule.send_to_targets = _send_to_targets
