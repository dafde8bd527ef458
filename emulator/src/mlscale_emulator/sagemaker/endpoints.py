"""Endpoints that really serve: Creating -> InService once every instance answers /ping; InvokeEndpoint
reaches the model servers; UpdateEndpoint (moto has none) brings up the new fleet before it takes traffic
and shifts traffic by its DeploymentConfig, rolling back when an alarm fires."""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models as sm_models
from moto.sagemaker import responses as sm_responses
from moto.sagemaker.exceptions import ValidationError
from moto.sagemakerruntime import responses as runtime_responses

from mlscale_emulator.executors.deployment import Router, plan_from, shift_traffic
from mlscale_emulator.executors.endpoint import Fleet, ModelError, TransformFailed
from mlscale_emulator.sagemaker import quotas
from mlscale_emulator.state import INTERRUPTED, backends_of
from mlscale_emulator.transitions import ENDPOINT, Status, arm

log = logging.getLogger(__name__)
_fleets: dict[str, Router] = {}  # endpoint ARN -> its model servers (processes: not state, never saved)
_starting: set = set()  # fleets whose model servers are still starting (not yet in _fleets)


def _now() -> datetime:
    return datetime.now(UTC)


class EmulatedEndpoint(sm_models.FakeEndpoint):
    endpoint_status = Status(ENDPOINT)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.endpoint_status = "Creating"
        self.failure_reason = None
        arm(self)


def _bring_up(endpoint, config_name: str, variants: list[dict], region: str, on_ready) -> None:
    fleet = Fleet(endpoint.endpoint_name, config_name, variants, region)
    _starting.add(fleet)  # an emulator stopped while it starts stops it too (its servers are sessions of their own)
    try:
        fleet.start()
    except (TransformFailed, Exception) as error:  # noqa: BLE001 - the reason goes on the endpoint
        fleet.stop()
        on_ready(None, str(error))
        return
    finally:
        _starting.discard(fleet)
    on_ready(fleet, None)


def _serve(backend, endpoint) -> None:
    """Start the model servers of the endpoint's config; InService once they answer, Failed if they cannot."""

    def ready(fleet, failure):
        endpoint.last_modified_time = _now()
        if fleet is None:
            endpoint.endpoint_status, endpoint.failure_reason = "Failed", failure[:1024]
            return
        _fleets[endpoint.arn] = Router(fleet)
        endpoint.endpoint_status = "InService"

    # moto keeps the describe shape of the variants; the fleet needs the config's (ModelName, counts, weights)
    variants = backend.describe_endpoint_config(endpoint.endpoint_config_name)["ProductionVariants"]
    threading.Thread(
        target=_bring_up,
        args=(endpoint, endpoint.endpoint_config_name, variants, backend.region_name, ready),
        daemon=True,
    ).start()


def _response_create_endpoint(self) -> ActionResult:
    backend = self.sagemaker_backend
    config = backend.endpoint_configs.get(self._get_param("EndpointConfigName"))
    with quotas.lock:
        if config is not None:  # moto answers a missing config itself
            quotas.check_endpoint(config.production_variants, backend.endpoints, backend.endpoint_configs)
        result = _moto_create_endpoint(self)
    _serve(self.sagemaker_backend, self.sagemaker_backend.endpoints[self._get_param("EndpointName")])
    return result


def _response_update_endpoint(self) -> ActionResult:
    name, config_name = self._get_param("EndpointName"), self._get_param("EndpointConfigName")
    backend = self.sagemaker_backend
    if name not in backend.endpoints:
        raise ValidationError(f'Could not find endpoint "{name}".')
    endpoint = backend.endpoints[name]
    if endpoint.endpoint_status != "InService":
        raise ValidationError(f'Cannot update in-progress endpoint "{name}" (status {endpoint.endpoint_status}).')
    config = backend.describe_endpoint_config(config_name)
    quotas.check_endpoint(config["ProductionVariants"], backend.endpoints, backend.endpoint_configs)  # blue runs on
    deployment = self._get_param("DeploymentConfig")
    endpoint.endpoint_status = "Updating"
    region = self.region

    def ready(fleet, failure):
        router = _fleets[endpoint.arn]
        if fleet is None:  # green never passed /ping: blue keeps serving, and a failed update still ends InService
            endpoint.endpoint_status, endpoint.failure_reason = "InService", failure[:1024]
            endpoint.last_modified_time = _now()
            return
        green_instances = sum(int(v.get("InitialInstanceCount", 1)) for v in config["ProductionVariants"])
        plan = plan_from(deployment, green_instances)
        firing = shift_traffic(router, fleet, plan, region)
        if firing:
            fleet.stop()
            endpoint.failure_reason = (
                f"Update rolled back: alarm {firing} went into ALARM while traffic shifted; "
                f"the endpoint still serves {endpoint.endpoint_config_name}"
            )
        else:
            old = router.promote()
            endpoint.endpoint_config_name = config_name
            endpoint.production_variants = endpoint._process_production_variants(config["ProductionVariants"])
            endpoint.failure_reason = None
            time.sleep(max(plan.termination_wait, 1))  # requests blue is answering finish first
            old.stop()
        endpoint.endpoint_status = "InService"
        endpoint.last_modified_time = _now()

    threading.Thread(
        target=_bring_up, args=(endpoint, config_name, config["ProductionVariants"], region, ready), daemon=True
    ).start()
    return ActionResult({"EndpointArn": endpoint.arn})


def _response_delete_endpoint(self) -> EmptyResult:
    endpoint = self.sagemaker_backend.endpoints.get(self._get_param("EndpointName"))
    result = _moto_delete_endpoint(self)
    fleet = _fleets.pop(endpoint.arn, None) if endpoint else None
    if fleet:
        fleet.stop()
    return result


def _error(status: int, kind: str, body: dict):
    return (
        status,
        {"status": status, "Content-Type": "application/json", "x-amzn-ErrorType": kind},
        json.dumps({"__type": kind, **body}),
    )


def _runtime_invoke_endpoint(self):
    name = self.path.split("/endpoints/")[1].split("/")[0]
    from urllib.parse import unquote

    name = unquote(name)
    endpoint = sm_models.sagemaker_backends[self.current_account][self.region].endpoints.get(name)
    fleet = _fleets.get(endpoint.arn) if endpoint else None
    if fleet is None:
        return _error(
            400, "ValidationError", {"message": f"Endpoint {name} of account {self.current_account} not found."}
        )
    try:
        answer, content_type, variant = fleet.invoke(
            self.raw_body or b"",
            self.headers.get("Content-Type"),
            self.headers.get("Accept"),
            self.headers.get("X-Amzn-SageMaker-Target-Variant"),
        )
    except KeyError as missing:
        return _error(400, "ValidationError", {"message": f"Variant {missing} is not in endpoint {name}."})
    except ModelError as error:
        message = (
            f'Received client error ({error.status}) from primary with message "{error.body[:500]}". '
            f"See the CloudWatch log group /aws/sagemaker/Endpoints/{name} for more information."
        )
        return _error(
            424,
            "ModelError",
            {"message": message, "OriginalStatusCode": error.status, "OriginalMessage": error.body[:1000]},
        )
    headers = {"Content-Type": content_type, "x-Amzn-Invoked-Production-Variant": variant}
    custom = self.headers.get("X-Amzn-SageMaker-Custom-Attributes")
    if custom:
        headers["X-Amzn-SageMaker-Custom-Attributes"] = custom
    return 200, headers, answer


_moto_create_endpoint = sm_responses.SageMakerResponse.create_endpoint
_moto_delete_endpoint = sm_responses.SageMakerResponse.delete_endpoint


def install() -> None:
    sm_models.FakeEndpoint = EmulatedEndpoint
    sm_responses.SageMakerResponse.create_endpoint = _response_create_endpoint
    sm_responses.SageMakerResponse.update_endpoint = _response_update_endpoint
    sm_responses.SageMakerResponse.delete_endpoint = _response_delete_endpoint
    runtime_responses.SageMakerRuntimeResponse.invoke_endpoint = _runtime_invoke_endpoint
    # an invocation's body is the caller's payload, bytes (NumPy's .npy from the SDK's predictors), never text
    runtime_responses.SageMakerRuntimeResponse.use_raw_body = True


def stop_all() -> None:
    for fleet in [*_fleets.values(), *list(_starting)]:
        fleet.stop()
    _fleets.clear()


def recover() -> None:
    """After a restore: each endpoint's model servers start again on its config (SystemUpdating, as SageMaker
    shows maintenance, until they answer /ping); an update under way is gone, so the endpoint keeps the config
    it served; one being created ends Failed."""
    for backend in backends_of(sm_models.sagemaker_backends):
        for endpoint in backend.endpoints.values():
            if endpoint.endpoint_status == "Creating":
                endpoint.endpoint_status, endpoint.failure_reason = "Failed", INTERRUPTED
            elif endpoint.endpoint_status in ("InService", "Updating", "SystemUpdating", "RollingBack"):
                endpoint.endpoint_status = "SystemUpdating"
                _serve(backend, endpoint)
