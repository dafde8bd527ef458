"""The one trigger every stage and sensor waits on: any resource kind of mlscale.waits.kinds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from mlscale.triggers import first_event_delay, hold_first_event

# The waits' blocking polls (boto3) run here, not in the loop's default executor: that one has cores + 4
# threads (6 on 2 cores), so hundreds of waits queued behind each other and saw their jobs end late.
POLL_THREADS = 32
_polls = ThreadPoolExecutor(max_workers=POLL_THREADS, thread_name_prefix="mlscale-poll")


class StageTrigger(BaseTrigger):
    """Polls the resource until it settles, logging its status changes and (for jobs) its CloudWatch lines.

    No attempt cap: the provider's waiter triggers stop after max_attempts (30
    minutes for SageMakerTrigger by default); here the task's timeout is the
    only limit. Events: `success` or `failed` with the end state and the
    service's reason, or `error` when describing it failed. When the task is
    killed (mark failed, clear) and `stop_on_kill` is set, on_kill stops the
    resource, as the operator's on_kill does when it waits in a worker.

    `next_poll_at`: when to make the first Describe (epoch seconds; None: at once). A stage defers right after
    it created the resource or saw it in progress, and asks again one poll interval after that look: an
    immediate poll would only repeat it, while a hand-off to the triggerer slower than the interval still gets
    its first poll at once. A sensor, which has seen nothing yet, passes None.
    """

    def __init__(
        self,
        kind: str,
        resource_id: str,
        poll_interval: float = 30,
        stop_on_kill: bool = False,
        aws_conn_id: str | None = "aws_default",
        region_name: str | None = None,
        verify: bool | str | None = None,
        botocore_config: dict | None = None,
        next_poll_at: float | None = None,
    ):
        super().__init__()
        self.next_poll_at = next_poll_at
        self.kind, self.resource_id, self.poll_interval, self.stop_on_kill = (
            kind,
            resource_id,
            poll_interval,
            stop_on_kill,
        )
        self.aws_conn_id, self.region_name, self.verify, self.botocore_config = (
            aws_conn_id,
            region_name,
            verify,
            botocore_config,
        )

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "kind": self.kind,
                "resource_id": self.resource_id,
                "poll_interval": self.poll_interval,
                "stop_on_kill": self.stop_on_kill,
                "aws_conn_id": self.aws_conn_id,
                "region_name": self.region_name,
                "verify": self.verify,
                "botocore_config": self.botocore_config,
                "next_poll_at": self.next_poll_at,
            },
        )

    def _hook(self):
        """The kind and its hook (shared by the waits on one connection), its client made. Blocking: call it in
        a thread, never on the triggerer's event loop. Making a client reads the connection (through the
        triggerer's supervisor) under the hook class's cached_property lock, which Python 3.11 shares between
        all instances: on the loop, it waits for another trigger's thread that holds the lock while it waits
        for the loop (a deadlock seen with the provider's SqsSensorTrigger polling beside this trigger)."""
        from mlscale.waits.kinds import KINDS
        from mlscale.waits.watch import shared_hook

        kind = KINDS[self.kind]
        return kind, shared_hook(kind, self.aws_conn_id, self.region_name, self.verify, self.botocore_config)

    def _watch(self):
        from mlscale.waits.watch import ResourceWatch

        kind, hook = self._hook()
        return kind, ResourceWatch(kind, self.resource_id, hook, interval=float(self.poll_interval))

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        try:
            kind, watch = await loop.run_in_executor(_polls, self._watch)
            if self.next_poll_at is not None:
                await asyncio.sleep(max(0.0, float(self.next_poll_at) - time.time()))
            while True:
                # boto3 is blocking: keep it off the triggerer's event loop
                description, lines = await loop.run_in_executor(_polls, watch.poll)
                for line in lines:
                    self.log.info(line)
                if kind.settled(description):
                    event = kind.event(self.resource_id, description)
                    break
                await asyncio.sleep(float(self.poll_interval))
        except Exception as error:  # noqa: BLE001 - the task fails with it, rather than the triggerer logging it
            event = {
                "status": "error",
                "kind": self.kind,
                "resource_id": self.resource_id,
                "state": None,
                "reason": f"{type(error).__name__}: {error}",
            }
        await hold_first_event(started, first_event_delay())
        yield TriggerEvent(event)

    async def on_kill(self) -> None:
        """Airflow calls this when a user kills the deferred task; stop what the task started."""
        if not self.stop_on_kill:
            return
        from botocore.exceptions import ClientError

        from mlscale.waits.kinds import KINDS

        if KINDS[self.kind].stop is None:
            return
        try:
            kind, hook = await asyncio.to_thread(self._hook)
            await asyncio.to_thread(kind.stop, hook.conn, self.resource_id)
            self.log.info("Stopped %s %s: its task was killed.", kind.noun, self.resource_id)
        except ClientError as error:  # already ended: nothing to stop
            self.log.info("%s %s not stopped: %s", kind.noun, self.resource_id, error)
