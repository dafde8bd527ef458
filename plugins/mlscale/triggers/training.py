"""Wait for a training job in the triggerer, streaming its CloudWatch logs into the task log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

TERMINAL_STATES = ("Completed", "Failed", "Stopped")


class TrainingJobTrigger(BaseTrigger):
    """Polls DescribeTrainingJob until a terminal state; the task's timeout is the only limit.

    The provider's SageMakerTrigger stops after max_attempts (30 minutes by
    default) and does not show the job's logs; this one does both.
    """

    def __init__(
        self,
        job_name: str,
        poll_interval: float = 30,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict | None = None,
        log_positions: dict[str, list[int]] | None = None,
    ):
        super().__init__()
        self.job_name = job_name
        self.poll_interval = poll_interval
        self.aws_conn_id = aws_conn_id
        self.region_name = region_name
        self.verify = verify
        self.botocore_config = botocore_config
        self.log_positions = log_positions or {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "job_name": self.job_name,
                "poll_interval": self.poll_interval,
                "aws_conn_id": self.aws_conn_id,
                "region_name": self.region_name,
                "verify": self.verify,
                "botocore_config": self.botocore_config,
                "log_positions": self.log_positions,
            },
        )

    def _hook(self):
        from airflow.providers.amazon.aws.hooks.sagemaker import SageMakerHook

        return SageMakerHook(
            aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify, config=self.botocore_config
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from mlscale.hooks.training_logs import TrainingLogTail
        from mlscale.hooks.training_status import describe_progress

        hook = self._hook()
        tail = TrainingLogTail(hook, self.job_name, self.log_positions)
        previous: dict | None = None
        while True:
            description = await asyncio.to_thread(hook.describe_training_job, self.job_name)
            for line in describe_progress(description, previous):
                self.log.info(line)
            previous = description
            for line in await asyncio.to_thread(tail.poll):
                self.log.info(line)
            status = description["TrainingJobStatus"]
            if status in TERMINAL_STATES:
                yield TriggerEvent(
                    {
                        "status": status,
                        "job_name": self.job_name,
                        "secondary_status": description.get("SecondaryStatus"),
                        "failure_reason": description.get("FailureReason"),
                    }
                )
                return
            await asyncio.sleep(self.poll_interval)
