"""The Greengrass v2 API the pipeline needs, as moto URL handlers (rest-json, SigV4 service "greengrass").

Core devices are IoT things (moto's IoT) carrying the attributes
greengrass=core, os and architecture: provision them with the IoT API and the
emulator runs a simulated nucleus for each. A deployment rolls out to a thing
group's core devices as an IoT job does (mlscale_emulator.greengrass.rollout);
a thing-group deployment ends COMPLETED here (on AWS it stays ACTIVE until
superseded), or CANCELED when the abort criteria trip.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from mlscale_emulator import settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.greengrass import rollout
from mlscale_emulator.greengrass.recipes import RecipeError, parse_recipe
from mlscale_emulator.state import INTERRUPTED, RegionState, backends_of, region_state

_state = region_state("greengrassv2")


class _Tables:
    """Greengrass's state in one account and region (kept in `_state`, so moto's reset and snapshot hold it)."""

    def __init__(self, state: RegionState):
        self.components: dict[tuple[str, str], dict] = state.table("components")  # (name, version) -> record
        self.deployments: dict[str, dict] = state.table("deployments")
        self.tokens: dict[str, str] = state.table("tokens")
        self.device_history: dict[str, list[dict]] = state.table("device_history")  # thing -> newest last
        self.device_components: dict[str, list] = state.table("device_components")  # what each device runs now


def _json(status: int, body: Any) -> tuple[int, dict, str]:
    return status, {"Content-Type": "application/json"}, json.dumps(body, default=str)


def _error(status: int, kind: str, message: str) -> tuple[int, dict, str]:
    return status, {"Content-Type": "application/json", "x-amzn-ErrorType": kind}, json.dumps({"message": message})


def _body(request) -> dict:
    raw = getattr(request, "data", None) or getattr(request, "body", None) or b"{}"
    return json.loads(raw if isinstance(raw, (str, bytes)) else b"{}")


def _region(headers) -> str:
    auth = headers.get("Authorization", "")
    try:
        return auth.split("Credential=")[1].split("/")[2]
    except IndexError:
        return "us-east-1"


def _account(headers) -> str:
    """The account of the request's access key, as moto's own services find it."""
    from moto.iam.models import get_account_id_from

    try:
        return get_account_id_from(headers.get("Authorization", "").split("Credential=")[1].split("/")[0])
    except IndexError:
        return settings.ACCOUNT_ID


def _tables(headers) -> _Tables:
    return _Tables(_state[_account(headers)][_region(headers)])


def component_arn(region: str, name: str, version: str | None = None) -> str:
    base = f"arn:aws:greengrass:{region}:{settings.ACCOUNT_ID}:components:{name}"
    return f"{base}:versions:{version}" if version else base


# -- components --------------------------------------------------------------------------------------


def create_component_version(request, full_url, headers):
    t = _tables(headers)
    body, region = _body(request), _region(headers)
    token = body.get("clientToken")
    if token and token in t.tokens:
        return _json(201, t.components[tuple(t.tokens[token].split("|"))]["summary"])
    try:
        recipe = parse_recipe(base64.b64decode(body.get("inlineRecipe", "")))
    except (RecipeError, ValueError) as error:
        return _error(400, "ValidationException", f"inlineRecipe: {error}")
    name, version = recipe["componentname"], str(recipe["componentversion"])
    if (name, version) in t.components:
        return _error(409, "ConflictException", f"Component {name} version {version} already exists")
    errors = _missing_artifacts(recipe, region)
    status = {
        "componentState": "FAILED" if errors else "DEPLOYABLE",
        "message": "NOT_DEPLOYABLE" if errors else "DEPLOYABLE",
        "errors": errors,
    }
    summary = {
        "arn": component_arn(region, name, version),
        "componentName": name,
        "componentVersion": version,
        "creationTimestamp": time.time(),
        "status": status,
    }
    t.components[(name, version)] = {"recipe": recipe, "summary": summary}
    if token:
        t.tokens[token] = f"{name}|{version}"
    return _json(201, summary)


def _missing_artifacts(recipe: dict, region: str) -> dict[str, str]:
    s3 = settings.aws_client("s3", region)
    missing = {}
    for manifest in recipe.get("manifests") or []:
        for artifact in manifest.get("artifacts") or []:
            uri = artifact.get("uri", "")
            try:
                bucket, key = s3io.split_s3_uri(uri)
                s3.head_object(Bucket=bucket, Key=key)
            except Exception:  # noqa: BLE001 - any failure means the artifact cannot be fetched
                missing[uri] = "The artifact is not accessible in S3"
    return missing


def describe_component(request, full_url, headers):
    t = _tables(headers)
    arn = unquote(urlparse(full_url).path.split("/components/")[1].removesuffix("/metadata"))
    parts = arn.split(":")
    key = (parts[6], parts[8]) if len(parts) > 8 else None
    if key not in t.components:
        return _error(404, "ResourceNotFoundException", f"Component {arn} not found")
    record = t.components[key]
    recipe = record["recipe"]
    summary = record["summary"]
    return _json(
        200,
        {
            **summary,
            "publisher": recipe.get("componentpublisher", ""),
            "description": recipe.get("componentdescription", ""),
            "platforms": [m.get("platform", {}) for m in recipe.get("manifests") or []],
        },
    )


# -- core devices --------------------------------------------------------------------------------------


def core_devices(region: str, group_arn: str | None = None) -> list[dict]:
    iot = settings.aws_client("iot", region)
    if group_arn:
        names = [
            t
            for page in iot.get_paginator("list_things_in_thing_group").paginate(
                thingGroupName=group_arn.split("/")[-1]
            )
            for t in page["things"]
        ]
    else:
        names = [t["thingName"] for t in iot.list_things()["things"]]
    devices = []
    for name in names:
        attributes = iot.describe_thing(thingName=name).get("attributes", {})
        if attributes.get("greengrass") == "core":
            devices.append(
                {
                    "coreDeviceThingName": name,
                    "platform": attributes.get("os", "linux"),
                    "architecture": attributes.get("architecture", "amd64"),
                }
            )
    return devices


def list_core_devices(request, full_url, headers):
    t = _tables(headers)
    query = parse_qs(urlparse(full_url).query)
    devices = core_devices(_region(headers), (query.get("thingGroupArn") or [None])[0])
    for device in devices:
        history = t.device_history.get(device["coreDeviceThingName"], [])
        device["status"] = (
            "UNHEALTHY" if history and history[-1]["coreDeviceExecutionStatus"] == "FAILED" else "HEALTHY"
        )
        device["lastStatusUpdateTimestamp"] = history[-1]["modifiedTimestamp"] if history else time.time()
        device["runtime"] = "aws_nucleus_classic"
    return _json(200, {"coreDevices": devices})


def list_effective_deployments(request, full_url, headers):
    t = _tables(headers)
    thing = unquote(urlparse(full_url).path.split("/coreDevices/")[1].split("/")[0])
    return _json(200, {"effectiveDeployments": list(reversed(t.device_history.get(thing, [])))})


# -- deployments ---------------------------------------------------------------------------------------


def deployments(request, full_url, headers):
    """POST creates a deployment, GET lists them (ListDeployments)."""
    if request.method == "GET":
        return list_deployments(request, full_url, headers)
    return create_deployment(request, full_url, headers)


def list_deployments(request, full_url, headers):
    """ListDeployments: newest first; targetArn filters; historyFilter LATEST_ONLY (the default) keeps the latest
    revision of each target."""
    t = _tables(headers)
    query = parse_qs(urlparse(full_url).query)
    target = (query.get("targetArn") or [None])[0]
    latest_only = (query.get("historyFilter") or ["LATEST_ONLY"])[0] == "LATEST_ONLY"
    found = [
        d
        for d in sorted(t.deployments.values(), key=lambda d: d["creationTimestamp"], reverse=True)
        if (target is None or d["targetArn"] == target) and (not latest_only or d["isLatestForTarget"])
    ]
    keys = (
        "targetArn",
        "revisionId",
        "deploymentId",
        "deploymentName",
        "creationTimestamp",
        "deploymentStatus",
        "isLatestForTarget",
    )
    return _json(200, {"deployments": [{k: d[k] for k in keys} for d in found]})


def create_deployment(request, full_url, headers):
    """CreateDeployment; a target's earlier deployment still rolling out is replaced (INACTIVE), as on AWS."""
    t = _tables(headers)
    body, region = _body(request), _region(headers)
    token = body.get("clientToken")
    if token and token in t.tokens:  # idempotent: the same token gives the same deployment
        deployment = t.deployments[t.tokens[token]]
        return _json(201, {k: deployment[k] for k in ("deploymentId", "iotJobId", "iotJobArn")})
    target = body.get("targetArn", "")
    if ":thinggroup/" not in target and ":thing/" not in target:
        return _error(400, "ValidationException", f"targetArn must be an IoT thing or thing group ARN: {target}")
    components = body.get("components") or {}
    for name, spec in components.items():
        record = t.components.get((name, spec.get("componentVersion")))
        if record is None or record["summary"]["status"]["componentState"] != "DEPLOYABLE":
            return _error(
                400,
                "ValidationException",
                f"Component {name} {spec.get('componentVersion')} is not DEPLOYABLE in this account and region",
            )
    deployment_id = str(uuid.uuid4())
    job_id = hashlib.sha256(deployment_id.encode()).hexdigest()[:32]
    deployment = {
        "deploymentId": deployment_id,
        "iotJobId": job_id,
        "iotJobArn": f"arn:aws:iot:{region}:{settings.ACCOUNT_ID}:job/{job_id}",
        "targetArn": target,
        "deploymentName": body.get("deploymentName", deployment_id),
        "components": components,
        "deploymentPolicies": body.get("deploymentPolicies") or {"failureHandlingPolicy": "ROLLBACK"},
        "iotJobConfiguration": body.get("iotJobConfiguration") or {},
        "creationTimestamp": time.time(),
        "deploymentStatus": "ACTIVE",
        "revisionId": "1",
        "isLatestForTarget": True,
        "tags": body.get("tags") or {},
    }
    with rollout.LOCK:
        for other in t.deployments.values():
            if other["targetArn"] == target:
                other["isLatestForTarget"] = False
                if other["deploymentStatus"] == "ACTIVE":
                    rollout.move_deployment(other, "INACTIVE")
        t.deployments[deployment_id] = deployment
        if token:
            t.tokens[token] = deployment_id
    threading.Thread(target=_run_deployment, args=(t, deployment, region), daemon=True).start()
    return _json(201, {k: deployment[k] for k in ("deploymentId", "iotJobId", "iotJobArn")})


def get_deployment(request, full_url, headers):
    t = _tables(headers)
    deployment_id = unquote(urlparse(full_url).path.rstrip("/").split("/")[-1])
    if deployment_id not in t.deployments:
        return _error(404, "ResourceNotFoundException", f"Deployment {deployment_id} not found")
    return _json(200, {k: v for k, v in t.deployments[deployment_id].items() if not k.startswith("_")})


def cancel_deployment(request, full_url, headers):
    """CancelDeployment: devices not yet reached are CANCELED; a device already installing finishes."""
    t = _tables(headers)
    deployment_id = unquote(urlparse(full_url).path.rstrip("/").split("/")[-2])
    with rollout.LOCK:
        deployment = t.deployments.get(deployment_id)
        if deployment is None:
            return _error(404, "ResourceNotFoundException", f"Deployment {deployment_id} not found")
        if deployment["deploymentStatus"] != "ACTIVE":
            return _error(409, "ConflictException", f"Deployment {deployment_id} is {deployment['deploymentStatus']}")
        rollout.move_deployment(deployment, "CANCELED")
    return _json(200, {"message": f"Deployment {deployment_id} canceled"})


def _run_deployment(t: _Tables, deployment: dict, region: str) -> None:
    target = deployment["targetArn"]
    if ":thing/" in target:
        name = target.split("/")[-1]
        devices = [d for d in core_devices(region) if d["coreDeviceThingName"] == name]
    else:
        devices = core_devices(region, target)
    rollout.run_deployment(t, deployment, region, devices)


ROUTES = {
    "{0}/greengrass/v2/createComponentVersion$": create_component_version,
    "{0}/greengrass/v2/components/(?P<arn>[^/]+)/metadata$": describe_component,
    "{0}/greengrass/v2/deployments$": deployments,
    "{0}/greengrass/v2/deployments/(?P<deploymentId>[^/]+)$": get_deployment,
    "{0}/greengrass/v2/deployments/(?P<deploymentId>[^/]+)/cancel$": cancel_deployment,
    "{0}/greengrass/v2/coreDevices$": list_core_devices,
    "{0}/greengrass/v2/coreDevices/(?P<thing>[^/]+)/effectiveDeployments$": list_effective_deployments,
}


def recover() -> None:
    """After a restore: a deployment that was rolling out ends FAILED, and so does each device still on it."""
    for state in backends_of(_state):
        t = _Tables(state)
        for deployment in t.deployments.values():
            if deployment["deploymentStatus"] != "ACTIVE":
                continue
            rollout.move_deployment(deployment, "FAILED")
            for thing, history in t.device_history.items():
                for entry in history:
                    if entry["deploymentId"] == deployment["deploymentId"] and entry["coreDeviceExecutionStatus"] in (
                        "QUEUED",
                        "IN_PROGRESS",
                    ):
                        rollout.record(t, thing, deployment, "FAILED", INTERRUPTED)


def install() -> None:
    from moto.greengrass import urls

    urls.url_paths.update(ROUTES)
