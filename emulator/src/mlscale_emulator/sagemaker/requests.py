"""Request rules moto does not check but SageMaker does; the emulator must, since names become paths.

A job's name, its channels and a processing job's LocalPaths name directories in the emulator's home:
`../../x` would write outside it. Each broken rule answers 400 ValidationException, worded as
SageMaker words its constraint errors, before anything is created.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from moto.sagemaker.exceptions import ValidationError

from mlscale_emulator import algorithms

NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")  # every SageMaker job and resource name
CHANNEL = re.compile(r"[A-Za-z0-9\.\-_]{1,64}")
PROCESSING_ROOT = "/opt/ml/processing/"


def _constraint(value: Any, field: str, rule: str) -> ValidationError:
    return ValidationError(
        f"1 validation error detected: Value '{value}' at '{field}' failed to satisfy constraint: {rule}"
    )


def name(value: Any, field: str) -> None:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise _constraint(value, field, f"Member must satisfy regular expression pattern: {NAME.pattern}")


def instance_count(value: Any, field: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _constraint(value, field, "Member must have value greater than or equal to 1")


def metric_pattern(regex: str):
    """A MetricDefinition's regex in RE2, which matches in time linear in the line: the emulator's server
    runs it on every log line of the job, and Python's `re` can take seconds on one line (`(a+)+$`)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    return re2.compile(regex, options)


def metric_definitions(definitions: Any, field: str) -> None:
    import re2

    for index, definition in enumerate(definitions or []):
        regex = (definition or {}).get("Regex") if isinstance(definition, dict) else None
        try:
            metric_pattern(regex)
        except (re2.error, TypeError):
            raise _constraint(
                regex,
                f"{field}.{index + 1}.member.regex",
                "Member must be a regular expression "
                "the emulator can match in linear time (RE2: no backreferences or lookaround)",
            ) from None


def program(environment: dict | None, hyperparameters: dict | None) -> str | None:
    """The training script a request names: SAGEMAKER_PROGRAM, or the SDK's JSON-encoded sagemaker_program."""
    raw = (environment or {}).get("SAGEMAKER_PROGRAM") or (hyperparameters or {}).get("sagemaker_program")
    try:
        return json.loads(raw) if isinstance(raw, str) and raw.startswith('"') else raw
    except ValueError:
        return raw


def training(params: dict) -> None:
    name(params.get("TrainingJobName"), "trainingJobName")
    image = (params.get("AlgorithmSpecification") or {}).get("TrainingImage") or ""
    refused = algorithms.refusal(image, program(params.get("Environment"), params.get("HyperParameters")))
    if refused:
        raise _constraint(image, "algorithmSpecification.trainingImage", refused)
    metric_definitions(
        (params.get("AlgorithmSpecification") or {}).get("MetricDefinitions"),
        "algorithmSpecification.metricDefinitions",
    )
    instance_count((params.get("ResourceConfig") or {}).get("InstanceCount"), "resourceConfig.instanceCount")
    for index, channel in enumerate(params.get("InputDataConfig") or []):
        channel_name = channel.get("ChannelName")
        if not isinstance(channel_name, str) or not CHANNEL.fullmatch(channel_name) or not channel_name.strip("."):
            raise _constraint(
                channel_name,
                f"inputDataConfig.{index + 1}.member.channelName",
                f"Member must satisfy regular expression pattern: {CHANNEL.pattern}, and not be only "
                "dots (the channel is the directory /opt/ml/input/data/<name>)",
            )


def processing(params: dict) -> None:
    name(params.get("ProcessingJobName"), "processingJobName")
    cluster = (params.get("ProcessingResources") or {}).get("ClusterConfig") or {}
    instance_count(cluster.get("InstanceCount"), "processingResources.clusterConfig.instanceCount")
    paths = [
        (f"processingInputs.{i + 1}.member.s3Input.localPath", (item.get("S3Input") or {}).get("LocalPath"))
        for i, item in enumerate(params.get("ProcessingInputs") or [])
    ]
    outputs = (params.get("ProcessingOutputConfig") or {}).get("Outputs") or []
    paths += [
        (
            f"processingOutputConfig.outputs.{i + 1}.member.s3Output.localPath",
            (item.get("S3Output") or {}).get("LocalPath"),
        )
        for i, item in enumerate(outputs)
    ]
    for field, path in paths:
        if path is None:
            continue
        if not isinstance(path, str) or not (posixpath.normpath(path) + "/").startswith(PROCESSING_ROOT):
            raise _constraint(path, field, f"LocalPath must be an absolute path below {PROCESSING_ROOT}")


def transform(params: dict) -> None:
    name(params.get("TransformJobName"), "transformJobName")
    instance_count((params.get("TransformResources") or {}).get("InstanceCount"), "transformResources.instanceCount")


def compilation(params: dict) -> None:
    name(params.get("CompilationJobName"), "compilationJobName")
