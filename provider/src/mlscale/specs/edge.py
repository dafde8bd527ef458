"""EdgeDeploymentSpec: the compiled model as a Greengrass v2 component, deployed to a thing group."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.rules import is_number, require

THING_GROUP = re.compile(r"^[a-zA-Z0-9:_-]{1,128}\Z")  # AWS IoT CreateThingGroup's thingGroupName


@dataclass
class EdgeDeploymentSpec:
    component_name: str  # e.g. com.example.Classifier
    compiled_artifact: str  # the Neo-compiled model, s3://...
    app_source: str  # the inference app that runs on each device (a local file, shipped as an artifact)
    artifact_prefix: str  # where the app's zip is uploaded
    thing_group_name: str
    sample: Any = None  # what each device classifies once as a smoke test (JSON or its string)
    failure_handling: str = "ROLLBACK"  # or DO_NOTHING
    abort_threshold_percent: float = 50.0  # cancel the rollout once this share of devices failed
    component_timeout: int = 120  # seconds a device may take to install and run the component
    # orders deploys of several runs to one target: an older model_version than the one it has is skipped
    model_version: str | None = None

    template_fields = (
        "compiled_artifact",
        "artifact_prefix",
        "thing_group_name",
        "sample",
        "abort_threshold_percent",
        "component_timeout",
        "model_version",
    )

    def validate(self) -> None:
        coerce_fields(self)
        rules.model_version(self.model_version)
        require(
            isinstance(self.component_name, str) and bool(rules.NAME.match(self.component_name.replace(".", "-"))),
            "component_name",
            "must be letters, digits, '.' and '-'",
            self.component_name,
        )
        rules.s3_uri(self.compiled_artifact, "compiled_artifact")
        rules.s3_uri(self.artifact_prefix, "artifact_prefix")
        require(Path(self.app_source).is_file(), "app_source", "must be an existing file", self.app_source)
        require(
            isinstance(self.thing_group_name, str) and bool(THING_GROUP.match(self.thing_group_name)),
            "thing_group_name",
            "must be 1-128 letters, digits, '_', '-' and ':'",
            self.thing_group_name,
        )
        require(
            self.failure_handling in ("ROLLBACK", "DO_NOTHING"),
            "failure_handling",
            "must be ROLLBACK or DO_NOTHING",
            self.failure_handling,
        )
        require(
            is_number(self.abort_threshold_percent) and 0 < self.abort_threshold_percent <= 100,
            "abort_threshold_percent",
            "must be a number in (0, 100]",
            self.abort_threshold_percent,
        )
        rules.in_range(self.component_timeout, "component_timeout", 1, 3600)

    def sample_value(self) -> Any:
        import json

        return json.loads(self.sample) if isinstance(self.sample, str) else self.sample
