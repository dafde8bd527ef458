"""The example DAG's params that its form cannot check, checked when the run starts, before any AWS call.

A bad `target_device` would otherwise fail only at `compile`, after training; an unknown quality
threshold only at `quality`, after the ETL; an instance type botocore does not list only at `train`. (The
form's JSON schema cannot hold botocore's lists of Neo targets and instance types without loading
botocore's SageMaker model at every parse.)
"""

from __future__ import annotations

from typing import Any

from mlscale.specs.coerce import convert
from mlscale.specs.errors import SpecError


def check_run_params(params: dict[str, Any]) -> None:
    from mlscale.quality.profile import QualityThresholds
    from mlscale.specs.rules import instance_type, sagemaker_enum

    # the form checks its shape; the API's list is botocore's (an unknown type failed only at `train`)
    instance_type(params["instance_type"], "params.instance_type", "TrainingInstanceType")
    targets = sagemaker_enum("TargetDevice")
    if params["target_device"] not in targets:
        raise SpecError(
            "params.target_device", f"must be a Neo TargetDevice: one of {', '.join(targets)}", params["target_device"]
        )
    quality = params["quality"]
    if isinstance(quality, str):
        quality = convert(quality, dict, "params.quality")
    unknown = sorted(set(quality) - set(QualityThresholds.__dataclass_fields__))
    if unknown:
        raise SpecError(
            "params.quality",
            f"unknown threshold {unknown[0]!r}; known: {', '.join(sorted(QualityThresholds.__dataclass_fields__))}",
        )
    try:
        QualityThresholds(**quality).validate()
    except SpecError as error:
        raise SpecError(f"params.quality[{error.field!r}]", error.rule, error.value) from None
