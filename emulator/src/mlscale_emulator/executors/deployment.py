"""Blue/green traffic shifting for UpdateEndpoint: ALL_AT_ONCE, CANARY or LINEAR, baking, alarm rollback.

The green fleet takes traffic only after it passes /ping; while traffic
shifts and bakes, the rollback alarms are read every second, and one in
ALARM sends all traffic back to blue. Blue stops only after the termination
wait, so requests it is answering finish. (SageMaker Developer Guide:
"Deployment guardrails for updating models in production".)
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from mlscale_emulator import settings


class Router:
    """What InvokeEndpoint reaches: blue, or blue and green with a share of traffic for green."""

    def __init__(self, blue):
        self.blue, self.green, self.green_share = blue, None, 0.0
        self._lock = threading.Lock()

    def invoke(self, *args, **kwargs):
        with self._lock:
            fleet = self.green if self.green is not None and random.random() < self.green_share else self.blue
        return fleet.invoke(*args, **kwargs)

    def shift(self, green, share: float) -> None:
        with self._lock:
            self.green, self.green_share = green, share

    def promote(self) -> object:
        """Green becomes blue; returns the old blue."""
        with self._lock:
            old, self.blue, self.green, self.green_share = self.blue, self.green, None, 0.0
        return old

    def stop(self) -> None:
        for fleet in (self.blue, self.green):
            if fleet is not None:
                fleet.stop()


@dataclass
class Plan:
    steps: list[float]  # green's share of traffic after each step
    wait_seconds: int  # baking time after each step
    termination_wait: int
    alarms: list[str]


def plan_from(deployment_config: dict | None, green_instances: int) -> Plan:
    policy = (deployment_config or {}).get("BlueGreenUpdatePolicy", {})
    routing = policy.get("TrafficRoutingConfiguration", {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0})
    kind, wait = routing.get("Type", "ALL_AT_ONCE"), int(routing.get("WaitIntervalInSeconds", 0))

    def share(size: dict) -> float:
        if size.get("Type") == "INSTANCE_COUNT":
            return min(1.0, float(size["Value"]) / max(green_instances, 1))
        return min(1.0, float(size.get("Value", 100)) / 100.0)

    if kind == "CANARY":
        steps = [share(routing["CanarySize"]), 1.0]
    elif kind == "LINEAR":
        step = share(routing["LinearStepSize"])
        steps, current = [], 0.0
        while current < 1.0:
            current = min(1.0, current + step)
            steps.append(current)
    else:
        steps = [1.0]
    alarms = [a["AlarmName"] for a in (deployment_config or {}).get("AutoRollbackConfiguration", {}).get("Alarms", [])]
    return Plan(steps, wait, int(policy.get("TerminationWaitInSeconds", 0)), alarms)


def alarm_firing(region: str, alarms: list[str]) -> str | None:
    if not alarms:
        return None
    cloudwatch = settings.aws_client("cloudwatch", region)
    for alarm in cloudwatch.describe_alarms(AlarmNames=alarms)["MetricAlarms"]:
        if alarm["StateValue"] == "ALARM":
            return alarm["AlarmName"]
    return None


def shift_traffic(router: Router, green, plan: Plan, region: str) -> str | None:
    """Walk the plan; the name of the alarm that rolled it back, or None when green took all traffic."""
    for share in plan.steps:
        router.shift(green, share)
        deadline = time.monotonic() + plan.wait_seconds
        while True:
            firing = alarm_firing(region, plan.alarms)
            if firing:
                router.shift(None, 0.0)  # all traffic back to blue
                return firing
            if time.monotonic() >= deadline:
                break
            time.sleep(1)
    return None
