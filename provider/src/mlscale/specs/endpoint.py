"""EndpointSpec: a real-time endpoint for one model, its autoscaling and a smoke test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.errors import SpecError
from mlscale.specs.rules import is_number, require


@dataclass
class EndpointSpec:
    endpoint_name: str
    model_artifact: str  # e.g. the Neo-compiled model.tar.gz
    role_arn: str
    image_uri: str
    instance_type: str = "ml.c5.large"
    instance_count: int = 1
    min_capacity: int = 1
    max_capacity: int = 4
    invocations_per_instance: float = 70.0  # SageMakerVariantInvocationsPerInstance target (per minute)
    scale_in_cooldown: int = 300
    scale_out_cooldown: int = 300
    sample_body: str = ""
    sample_content_type: str = "application/json"
    # Blue/green for updates (deployment guardrails): how green takes traffic, how long it bakes, what rolls back.
    traffic_routing: str = "ALL_AT_ONCE"  # or CANARY, LINEAR
    canary_percent: int = 10
    linear_step_percent: int = 25
    wait_seconds: int = 300
    termination_wait_seconds: int = 0
    rollback_alarms: list[str] = field(default_factory=list)
    # orders deploys of several runs to one target: an older model_version than the one it has is skipped
    model_version: str | None = None

    template_fields = (
        "endpoint_name",
        "model_artifact",
        "role_arn",
        "image_uri",
        "instance_type",
        "instance_count",
        "wait_seconds",
        "sample_body",
        "model_version",
    )

    def validate(self) -> None:
        coerce_fields(self)
        rules.model_version(self.model_version)
        require(
            bool(rules.NAME.match(self.endpoint_name or "")),
            "endpoint_name",
            "must be 1-63 letters, digits and '-'",
            self.endpoint_name,
        )
        rules.s3_uri(self.model_artifact, "model_artifact")
        rules.role_arn(self.role_arn)
        require(bool(self.image_uri), "image_uri", "is required (the inference container image)")
        rules.instance_type(self.instance_type, "instance_type", "ProductionVariantInstanceType")
        rules.in_range(self.instance_count, "instance_count", 1, 100)
        rules.in_range(self.min_capacity, "min_capacity", 1, 100)  # Application Auto Scaling: MinCapacity >= 1
        rules.in_range(self.max_capacity, "max_capacity", self.min_capacity, 1000)
        require(
            is_number(self.invocations_per_instance) and self.invocations_per_instance > 0,
            "invocations_per_instance",
            "must be > 0",
            self.invocations_per_instance,
        )
        rules.in_range(self.scale_in_cooldown, "scale_in_cooldown", 0, 86400)
        rules.in_range(self.scale_out_cooldown, "scale_out_cooldown", 0, 86400)
        require(
            self.traffic_routing in ("ALL_AT_ONCE", "CANARY", "LINEAR"),
            "traffic_routing",
            "must be ALL_AT_ONCE, CANARY or LINEAR",
            self.traffic_routing,
        )
        rules.in_range(self.canary_percent, "canary_percent", 1, 50)  # the canary is at most half the new fleet
        rules.in_range(self.linear_step_percent, "linear_step_percent", 1, 100)
        rules.in_range(self.wait_seconds, "wait_seconds", 0, 3600)
        rules.in_range(self.termination_wait_seconds, "termination_wait_seconds", 0, 3600)
        require(len(self.rollback_alarms) <= 10, "rollback_alarms", "at most 10 alarms", len(self.rollback_alarms))
        if isinstance(self.sample_body, (str, bytes)) and self.sample_body and "json" in self.sample_content_type:
            try:  # checked before the deploy: a bad sample failed only after the endpoint was InService
                json.loads(self.sample_body)
            except ValueError as error:
                raise SpecError(
                    "sample_body", f"must be JSON ({self.sample_content_type}): {error}", self.sample_body
                ) from None

    def deployment_config(self) -> dict[str, Any]:
        routing: dict[str, Any] = {"Type": self.traffic_routing, "WaitIntervalInSeconds": self.wait_seconds}
        if self.traffic_routing == "CANARY":
            routing["CanarySize"] = {"Type": "CAPACITY_PERCENT", "Value": self.canary_percent}
        if self.traffic_routing == "LINEAR":
            routing["LinearStepSize"] = {"Type": "CAPACITY_PERCENT", "Value": self.linear_step_percent}
        config: dict[str, Any] = {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": routing,
                "TerminationWaitInSeconds": self.termination_wait_seconds,
            }
        }
        if self.rollback_alarms:
            config["AutoRollbackConfiguration"] = {"Alarms": [{"AlarmName": a} for a in self.rollback_alarms]}
        return config
