"""Wait for a SageMaker job in the triggerer, streaming its CloudWatch logs into the task log."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from mlscale.triggers import hold_first_event


class SageMakerJobTrigger(BaseTrigger):
    """Polls the job (training, processing) until a terminal state; the task's timeout is the only limit.

    The provider's SageMakerTrigger stops after max_attempts (30 minutes by
    default) and does not show the job's logs; this one does both.
    """

    def __init__(
        self,
        job_kind: str,
        job_name: str,
        poll_interval: float = 30,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict | None = None,
    ):
        super().__init__()
        self.job_kind = job_kind
        self.job_name = job_name
        self.poll_interval = poll_interval
        self.aws_conn_id = aws_conn_id
        self.region_name = region_name
        self.verify = verify
        self.botocore_config = botocore_config

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "job_kind": self.job_kind,
                "job_name": self.job_name,
                "poll_interval": self.poll_interval,
                "aws_conn_id": self.aws_conn_id,
                "region_name": self.region_name,
                "verify": self.verify,
                "botocore_config": self.botocore_config,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

        from mlscale.hooks.job_logs import JobLogTail
        from mlscale.hooks.progress import ProgressReporter
        from mlscale.hooks.sagemaker_jobs import JOB_KINDS, TERMINAL_STATES, describe_progress

        kind = JOB_KINDS[self.job_kind]
        hook = SageMakerHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                             config=self.botocore_config)  # fmt: skip
        tail = JobLogTail(hook, kind.log_group, self.job_name)
        progress = ProgressReporter(kind.name_key, kind.status_key)
        previous: dict | None = None
        started = time.monotonic()
        while True:
            # boto3 is blocking: keep it off the triggerer's event loop
            description = await asyncio.to_thread(kind.describe, hook, self.job_name)
            new_lines = await asyncio.to_thread(tail.poll)
            summary = progress.update(description, new_lines)
            for line in describe_progress(description, previous, kind) + new_lines + summary:
                self.log.info(line)
            previous = description
            status = kind.status_of(description)
            if status in TERMINAL_STATES:
                await hold_first_event(started)
                yield TriggerEvent({"status": status, "job_name": self.job_name, "job_kind": self.job_kind,
                                    "failure_reason": description.get("FailureReason")})  # fmt: skip
                return
            await asyncio.sleep(float(self.poll_interval))
