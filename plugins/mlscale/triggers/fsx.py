"""Wait in the triggerer for an FSx file system, association or task to reach a settled state."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from mlscale.triggers import hold_first_event

SETTLED = {
    "file_system": ("AVAILABLE", "FAILED", "MISCONFIGURED"),
    "association": ("AVAILABLE", "FAILED", "MISCONFIGURED"),
    "task": ("SUCCEEDED", "FAILED", "CANCELED"),
}


class FSxLifecycleTrigger(BaseTrigger):
    """Polls Describe* until the resource settles; no attempt cap (the task's timeout is the limit)."""

    def __init__(self, kind: str, resource_id: str, poll_interval: float = 30, aws_conn_id: str | None = "aws_default",
                 region_name: str | None = None, verify: bool | str | None = None,
                 botocore_config: dict | None = None):  # fmt: skip
        super().__init__()
        self.kind, self.resource_id, self.poll_interval = kind, resource_id, poll_interval
        self.aws_conn_id, self.region_name, self.verify, self.botocore_config = (
            aws_conn_id, region_name, verify, botocore_config)  # fmt: skip

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"kind": self.kind, "resource_id": self.resource_id, "poll_interval": self.poll_interval,
                 "aws_conn_id": self.aws_conn_id, "region_name": self.region_name, "verify": self.verify,
                 "botocore_config": self.botocore_config})  # fmt: skip

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from mlscale.hooks.fsx import FSxHook

        hook = FSxHook(aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify,
                       config=self.botocore_config)  # fmt: skip
        started = time.monotonic()
        while True:
            lifecycle, failure = await asyncio.to_thread(hook.lifecycle, self.kind, self.resource_id)
            self.log.info("FSx %s %s: %s", self.kind.replace("_", " "), self.resource_id, lifecycle)
            if lifecycle in SETTLED[self.kind]:
                await hold_first_event(started)
                yield TriggerEvent({"kind": self.kind, "resource_id": self.resource_id, "lifecycle": lifecycle,
                                    "failure": failure})  # fmt: skip
                return
            await asyncio.sleep(float(self.poll_interval))
