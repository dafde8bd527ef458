"""SageMaker's account quotas on instances: "<instance type> for <training job | processing job | transform job |
endpoint> usage", counted over what runs in the account and region, as AWS applies them
(https://docs.aws.amazon.com/sagemaker/latest/dg/regions-quotas.html). A request that would go over is refused
with ResourceLimitExceeded and AWS's own message, before anything starts.

AWS applies per-account values that it does not publish as one table (new accounts often get 0 for GPU
types); the emulator assumes DEFAULT_INSTANCES for every quota, which the demo fits under and a single
40 x ml.p4d.24xlarge job does not. Set MLSCALE_EMULATOR_QUOTAS to a JSON object to change them:
{"default": 4, "ml.p4d.24xlarge for training job usage": 0}; {"default": null} turns quotas off.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from moto.sagemaker.exceptions import ValidationError

DEFAULT_INSTANCES = 20
RUNNING = ("InProgress", "Stopping", "Creating", "Updating", "InService", "SystemUpdating", "RollingBack")
lock = threading.RLock()  # a quota's check and the create it allows are one step: two creates may race


class ResourceLimitExceeded(ValidationError):
    code = "ResourceLimitExceeded"


def limit(quota: str) -> int | None:
    """The quota's value: MLSCALE_EMULATOR_QUOTAS's entry for it, its "default", or DEFAULT_INSTANCES."""
    try:
        configured = json.loads(os.environ.get("MLSCALE_EMULATOR_QUOTAS") or "{}")
    except ValueError:
        configured = {}
    if not isinstance(configured, dict):
        configured = {}
    value = configured.get(quota, configured.get("default", DEFAULT_INSTANCES))
    return None if value is None else int(value)


def check(quota_kind: str, instance_type: str, requested: int, in_use: int) -> None:
    """Refuse `requested` more instances of `instance_type` when `in_use` are already counted."""
    quota = f"{instance_type} for {quota_kind} usage"
    allowed = limit(quota)
    if allowed is not None and in_use + requested > allowed:
        raise ResourceLimitExceeded(
            f"The account-level service limit '{quota}' is {allowed} Instances, with current utilization of "
            f"{in_use} Instances and a request delta of {requested} Instances. Please use AWS Service Quotas to "
            "request an increase for this quota. If AWS Service Quotas is not available, contact AWS support to "
            "request an increase for this quota."
        )


# where each job kind keeps its instances, in its request and in moto's model
JOB_RESOURCES = {
    "training": ("training job", ("ResourceConfig",), "resource_config"),
    "processing": ("processing job", ("ProcessingResources", "ClusterConfig"), "processing_resources"),
    "transform": ("transform job", ("TransformResources",), "transform_resources"),
}


def _resources(value: Any, path: tuple[str, ...]) -> dict:
    for key in path:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def check_job(kind: str, params: dict, jobs: dict) -> None:
    """A Create<Kind>Job request against the instances the account's running jobs of that kind hold."""
    quota_kind, path, attribute = JOB_RESOURCES[kind]
    wanted = _resources(params, path)
    instance_type, count = wanted.get("InstanceType"), wanted.get("InstanceCount") or 1
    if not instance_type:
        return
    in_use = 0
    for job in jobs.values():
        if getattr(job, f"{kind}_job_status", None) not in RUNNING:
            continue
        held = _resources(getattr(job, attribute, None) or {}, path[1:])
        if held.get("InstanceType") == instance_type:
            in_use += int(held.get("InstanceCount") or 1)
    check(quota_kind, instance_type, int(count), in_use)


def check_endpoint(variants: list[dict], endpoints: dict, configs: dict) -> None:
    """An endpoint's variants against the instances other live endpoints hold (an update's blue fleet counts:
    both fleets run while traffic shifts)."""
    for instance_type in {v.get("InstanceType") for v in variants if v.get("InstanceType")}:
        requested = sum(
            int(v.get("InitialInstanceCount") or 1) for v in variants if v.get("InstanceType") == instance_type
        )
        in_use = 0
        for endpoint in endpoints.values():
            if getattr(endpoint, "endpoint_status", None) not in RUNNING:
                continue
            config = configs.get(endpoint.endpoint_config_name)
            for variant in getattr(config, "production_variants", None) or []:
                if variant.get("InstanceType") == instance_type:
                    in_use += int(variant.get("InitialInstanceCount") or 1)
        check("endpoint", instance_type, requested, in_use)
