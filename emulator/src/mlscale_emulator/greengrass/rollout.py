"""A Greengrass v2 deployment rolling out to its core devices, as an AWS IoT job does.

IoT jobs notify up to `maximumPerMinute` targets a minute, 1,000 when unset
(https://docs.aws.amazon.com/iot/latest/developerguide/job-configurations-api.html), so a small fleet installs at
once; an exponential rate is taken at its base rate. The abort criteria, checked as each device finishes, cancel
the devices not yet reached; devices already installing finish, as IN_PROGRESS job executions do. Each device runs
the components on its simulated nucleus (mlscale_emulator.greengrass.nucleus), one deployment at a time.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from mlscale_emulator.greengrass import nucleus
from mlscale_emulator.transitions import GREENGRASS_DEPLOYMENT, move

LOCK = threading.Lock()  # the deployments' and devices' records
_device_locks: dict[str, threading.Lock] = {}  # one deployment at a time per device (runtime, not state)


def move_deployment(deployment: dict, status: str) -> None:
    move(deployment, "deploymentStatus", status, GREENGRASS_DEPLOYMENT, f"deployment {deployment['deploymentId']}")


def record(t: Any, thing: str, deployment: dict, status: str, reason: str = "") -> None:
    with LOCK:
        history = t.device_history.setdefault(thing, [])
        entry = next((e for e in history if e["deploymentId"] == deployment["deploymentId"]), None)
        if entry is None:
            entry = {
                "deploymentId": deployment["deploymentId"],
                "deploymentName": deployment["deploymentName"],
                "iotJobId": deployment["iotJobId"],
                "iotJobArn": deployment["iotJobArn"],
                "targetArn": deployment["targetArn"],
                "creationTimestamp": time.time(),
            }
            history.append(entry)
        entry.update({"coreDeviceExecutionStatus": status, "reason": reason, "modifiedTimestamp": time.time()})


def run_deployment(t: Any, deployment: dict, region: str, devices: list[dict]) -> None:
    """Reach the devices at the rollout rate, each installing on its own; stop reaching more when the abort
    criteria trip or the deployment is canceled or replaced; then the deployment's end state."""
    for device in devices:
        record(t, device["coreDeviceThingName"], deployment, "QUEUED")
    rollout = _Rollout(t, deployment, region, len(devices))
    for index, device in enumerate(devices):
        if index:
            rollout.aborted.wait(rollout.interval)  # the rollout rate; tripped abort criteria end the wait
        why = rollout.why_stopped()
        if why:
            for rest in devices[index:]:
                record(t, rest["coreDeviceThingName"], deployment, "CANCELED", why)
            break
        rollout.reach(device)
    rollout.join()
    with LOCK:
        if deployment["deploymentStatus"] == "ACTIVE":  # not replaced or canceled meanwhile
            move_deployment(deployment, "CANCELED" if rollout.aborted.is_set() else "COMPLETED")


class _Rollout:
    """One deployment's devices in flight, and its abort criteria's counts."""

    def __init__(self, t: Any, deployment: dict, region: str, total: int):
        config = deployment["iotJobConfiguration"]
        rate = config.get("jobExecutionsRolloutConfig") or {}
        per_minute = rate.get("maximumPerMinute") or (rate.get("exponentialRate") or {}).get("baseRatePerMinute")
        self.interval = 60.0 / int(per_minute or 1000)
        self.criteria = (config.get("abortConfig") or {}).get("criteriaList") or []
        self.t, self.deployment, self.region, self.total = t, deployment, region, total
        self.policies = deployment["deploymentPolicies"]
        self.timeout = int((self.policies.get("componentUpdatePolicy") or {}).get("timeoutInSeconds", 60))
        self.aborted = threading.Event()
        self.failed = self.executed = 0
        self._counts = threading.Lock()
        self._threads: list[threading.Thread] = []

    def why_stopped(self) -> str | None:
        if self.aborted.is_set():
            return "the deployment's abort criteria tripped"
        status = self.deployment["deploymentStatus"]
        if status == "ACTIVE":
            return None
        return "the deployment was canceled" if status == "CANCELED" else "a newer deployment to the target replaced it"

    def reach(self, device: dict) -> None:
        thread = threading.Thread(
            target=self._install, args=(device,), daemon=True, name=f"greengrass-{device['coreDeviceThingName']}"
        )
        thread.start()
        self._threads.append(thread)

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _install(self, device: dict) -> None:
        thing = device["coreDeviceThingName"]
        with _device_lock(thing):  # a device applies one deployment at a time
            if self.deployment["deploymentStatus"] != "ACTIVE":  # canceled or replaced while the device was busy
                record(self.t, thing, self.deployment, "CANCELED", self.why_stopped() or "")
                return
            try:
                succeeded = _deploy_to_device(self.t, self.deployment, device, self.policies, self.timeout, self.region)
            except Exception as error:  # an emulator fault: the device fails with it instead of staying IN_PROGRESS
                record(self.t, thing, self.deployment, "FAILED", f"InternalError: {error!r}")
                succeeded = False
        with self._counts:
            self.executed += 1
            self.failed += not succeeded
            if _abort(self.criteria, self.failed, self.executed, self.total):
                self.aborted.set()


def _deploy_to_device(t: Any, deployment: dict, device: dict, policies: dict, timeout: int, region: str) -> bool:
    """Install and run the deployment's components on one device; False (and rolled back) when it fails."""
    thing = device["coreDeviceThingName"]
    record(t, thing, deployment, "IN_PROGRESS")
    platform = {"os": device["platform"], "architecture": device["architecture"]}
    wanted = [
        (t.components[(n, s["componentVersion"])]["recipe"], s.get("configurationUpdate"))
        for n, s in deployment["components"].items()
    ]
    running = {_same(recipe, update) for recipe, update in t.device_components.get(thing, [])}
    try:
        for recipe, update in wanted:
            if _same(recipe, update) in running:  # the nucleus restarts only what changed: nothing to do here
                continue
            nucleus.deploy_component(thing, platform, recipe, update, timeout, region)
    except nucleus.DeviceFailure as failure:
        reason = str(failure)
        if policies.get("failureHandlingPolicy", "ROLLBACK") == "ROLLBACK":
            for recipe, update in t.device_components.get(thing, []):
                try:
                    nucleus.deploy_component(thing, platform, recipe, update, timeout, region)
                except nucleus.DeviceFailure:
                    pass
            reason += "; rolled back to the previous components"
        record(t, thing, deployment, "FAILED", reason)
        return False
    t.device_components[thing] = wanted
    record(t, thing, deployment, "SUCCEEDED")
    return True


def _same(recipe: dict, update: dict | None) -> tuple[str, str, str]:
    """A component as the nucleus compares it: name, version and configuration update."""
    return recipe["componentname"], recipe["componentversion"], json.dumps(update or {}, sort_keys=True)


def _device_lock(thing: str) -> threading.Lock:
    with LOCK:
        return _device_locks.setdefault(thing, threading.Lock())


def _abort(criteria: list[dict], failed: int, executed: int, total: int) -> bool:
    for rule in criteria:
        if rule.get("failureType") not in ("FAILED", "ALL") or rule.get("action") != "CANCEL":
            continue
        enough = executed >= int(rule.get("minNumberOfExecutedThings", 1))
        if enough and 100.0 * failed / executed >= float(rule.get("thresholdPercentage", 100)):
            return True
    return False
