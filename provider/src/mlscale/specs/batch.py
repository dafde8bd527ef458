"""BatchTrainingSpec: distributed training as one AWS Batch multi-node parallel job, and its SubmitJob request.

Either a container `command` run as it is, or script mode: `entry_point` in `source_dir` (the same script
a SageMaker training job runs) started on every node by mlscale's node launcher (mlscale/in_job/batch_node.py).
The job definition comes from the cluster (`job_definition`, e.g. the CloudFormation stack's output) or is
registered from `image`. Limits from the AWS Batch API reference (SubmitJob, RetryStrategy, EvaluateOnExit,
JobTimeout, NodeOverrides).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlscale.metric_regex import MetricRegexError, compile_metric
from mlscale.specs import rules
from mlscale.specs.coerce import coerce_fields
from mlscale.specs.errors import SpecError
from mlscale.specs.rules import is_int, require

BATCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")
QUEUE_ARN = re.compile(r"^arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{12}:job-queue/[A-Za-z0-9_-]{1,128}\Z")
DEFINITION = re.compile(r"^(arn:aws[a-z-]*:batch:[a-z0-9-]+:\d{12}:job-definition/)?[A-Za-z0-9_-]{1,128}(:\d+)?\Z")
IMAGE = re.compile(r"^[a-z0-9]+([._/:@-][a-zA-Z0-9_.-]+)*\Z")
ENV_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*\Z")
EXIT_CODE_PATTERN = re.compile(r"^[0-9]*\*?\Z")
REASON_PATTERN = re.compile(r"^[A-Za-z0-9 .:]*\*?\Z")  # letters, digits, spaces, periods, colons; a trailing *
MAX_NODES = 1000
MIN_TIMEOUT = 60  # JobTimeout.attemptDurationSeconds: at least 60 seconds


@dataclass
class BatchTrainingSpec:
    """What a multi-node training job on an AWS Batch queue needs. Templated fields render before validation."""

    job_queue: str
    job_definition: str | None = None
    image: str | None = None
    command: list[str] = field(default_factory=list)
    entry_point: str | None = None
    source_dir: str | None = None
    output_path: str | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    distribution: str = "torchrun"
    node_count: int = 2
    main_node_index: int = 0
    vcpus: int = 2
    memory_mib: int = 4096
    gpus: int = 0
    environment: dict[str, str] = field(default_factory=dict)
    timeout_seconds: int | None = None
    retry_attempts: int = 1
    retry_on_exit: list[dict[str, str]] = field(default_factory=list)
    metric_definitions: dict[str, str] = field(default_factory=dict)
    job_role_arn: str | None = None
    tags: dict[str, str] = field(default_factory=dict)

    template_fields = (
        "job_queue",
        "job_definition",
        "image",
        "command",
        "source_dir",
        "output_path",
        "hyperparameters",
        "inputs",
        "node_count",
        "vcpus",
        "memory_mib",
        "gpus",
        "environment",
        "timeout_seconds",
        "retry_attempts",
        "tags",
    )

    @property
    def script_mode(self) -> bool:
        return bool(self.entry_point)

    # -- validation ----------------------------------------------------------------------------------

    def validate(self, check_files: bool = True) -> None:
        """Raise SpecError for the first broken rule. No AWS call is made."""
        coerce_fields(self)
        require(
            isinstance(self.job_queue, str)
            and bool(BATCH_NAME.match(self.job_queue) or QUEUE_ARN.match(self.job_queue)),
            "job_queue",
            "must be a job queue name (1-128 letters, digits, '-', '_') or its ARN",
            self.job_queue,
        )
        require(
            bool(self.job_definition) != bool(self.image),
            "job_definition",
            "give job_definition (name, name:revision or ARN) or image, exactly one",
        )
        if self.job_definition:
            require(
                bool(DEFINITION.match(self.job_definition)),
                "job_definition",
                "must be a job definition name, name:revision or ARN",
                self.job_definition,
            )
        else:
            require(
                bool(IMAGE.match(self.image or "")) and len(self.image) <= 255,
                "image",
                "must be a container image reference (repository[:tag] or @digest)",
                self.image,
            )
            if self.job_role_arn is not None:
                rules.role_arn(self.job_role_arn, "job_role_arn")
        self._validate_program(check_files)
        rules.in_range(self.node_count, "node_count", 1, MAX_NODES)
        require(
            is_int(self.main_node_index) and 0 <= self.main_node_index < self.node_count,
            "main_node_index",
            f"must be a node of the job: 0 to node_count - 1 ({self.node_count - 1})",
            self.main_node_index,
        )
        rules.in_range(self.vcpus, "vcpus", 1, 256)
        rules.in_range(self.memory_mib, "memory_mib", 4, 2_000_000)
        rules.in_range(self.gpus, "gpus", 0, 16)
        self._validate_environment()
        if self.timeout_seconds is not None:
            require(
                is_int(self.timeout_seconds) and self.timeout_seconds >= MIN_TIMEOUT,
                "timeout_seconds",
                f"must be at least {MIN_TIMEOUT} seconds (Batch's attemptDurationSeconds)",
                self.timeout_seconds,
            )
        rules.in_range(self.retry_attempts, "retry_attempts", 1, 10)
        self._validate_retry_on_exit()
        for name, regex in self.metric_definitions.items():
            try:
                groups = compile_metric(regex).groups
            except MetricRegexError as error:
                raise SpecError(f"metric_definitions[{name!r}]", str(error), regex) from None
            require(groups == 1, f"metric_definitions[{name!r}]", "needs exactly one capture group", regex)
        rules.tags(self.tags)

    def _validate_program(self, check_files: bool) -> None:
        if not self.script_mode:
            require(
                isinstance(self.command, list)
                and bool(self.command)
                and all(isinstance(part, str) for part in self.command),
                "command",
                "give a command (a list of strings) or entry_point with source_dir",
                self.command,
            )
            return
        require(not self.command, "command", "give command or entry_point, not both")
        require(self.entry_point.endswith(".py"), "entry_point", "must be a .py file", self.entry_point)
        require(bool(self.source_dir), "source_dir", "is required with entry_point")
        if check_files:
            require(Path(self.source_dir).is_dir(), "source_dir", "must be an existing directory", self.source_dir)
            require(
                (Path(self.source_dir) / self.entry_point).is_file(),
                "entry_point",
                f"must be a file inside source_dir {self.source_dir}",
                self.entry_point,
            )
        rules.s3_uri(self.output_path, "output_path")
        require(
            self.distribution in ("torchrun", "none"),
            "distribution",
            "must be torchrun (one torchrun rendezvous over the nodes) or none",
            self.distribution,
        )
        require(isinstance(self.hyperparameters, dict), "hyperparameters", "must be a mapping")
        for key, value in self.hyperparameters.items():
            require(
                isinstance(key, str) and bool(re.match(r"^[A-Za-z0-9_-]+\Z", key)),
                f"hyperparameters[{key!r}]",
                "keys are letters, digits, '-' and '_' (each becomes a --key argument)",
            )
            require(
                isinstance(value, (str, int, float, bool)),
                f"hyperparameters[{key!r}]",
                "values are strings, numbers or booleans",
                value,
            )
        require(isinstance(self.inputs, dict), "inputs", "must be a mapping of channel name to location")
        for name, source in self.inputs.items():
            require(
                bool(re.match(r"^[A-Za-z0-9.\-_]{1,64}\Z", name)),
                f"inputs[{name!r}]",
                "channel names are 1-64 letters, digits, '.', '-' and '_'",
            )
            require(
                isinstance(source, str) and (source.startswith("/") or bool(rules.S3_URI.match(source))),
                f"inputs[{name!r}]",
                "must be an s3:// prefix or an absolute path on the shared file system",
                source,
            )

    def _validate_environment(self) -> None:
        require(isinstance(self.environment, dict), "environment", "must be a mapping")
        for key, value in self.environment.items():
            require(bool(ENV_NAME.match(str(key))), f"environment[{key!r}]", "names match [a-zA-Z_][a-zA-Z0-9_]*")
            require(
                not str(key).startswith("AWS_BATCH"),
                f"environment[{key!r}]",
                "names starting with AWS_BATCH are reserved by AWS Batch",
            )
            require(isinstance(value, str), f"environment[{key!r}]", "values are strings", value)

    def _validate_retry_on_exit(self) -> None:
        require(
            isinstance(self.retry_on_exit, list) and len(self.retry_on_exit) <= 5,
            "retry_on_exit",
            "at most 5 conditions (evaluateOnExit)",
        )
        for number, condition in enumerate(self.retry_on_exit):
            label = f"retry_on_exit[{number}]"
            require(isinstance(condition, dict), label, "must be a mapping")
            unknown = set(condition) - {"action", "on_exit_code", "on_status_reason", "on_reason"}
            require(not unknown, label, f"unknown keys {sorted(unknown)}")
            require(
                str(condition.get("action", "")).upper() in ("RETRY", "EXIT"),
                f"{label}.action",
                "must be RETRY or EXIT",
                condition.get("action"),
            )
            require(len(condition) > 1, label, "needs a condition: on_exit_code, on_status_reason or on_reason")
            code = condition.get("on_exit_code")
            if code is not None:
                require(
                    isinstance(code, str) and bool(EXIT_CODE_PATTERN.match(code)) and 0 < len(code) <= 512,
                    f"{label}.on_exit_code",
                    "digits, optionally ending in * (e.g. 137 or 1*)",
                    code,
                )
            for key in ("on_status_reason", "on_reason"):
                value = condition.get(key)
                if value is not None:
                    require(
                        isinstance(value, str) and bool(REASON_PATTERN.match(value)) and len(value) <= 512,
                        f"{label}.{key}",
                        "letters, digits, spaces, '.' and ':', optionally ending in *",
                        value,
                    )

    # -- requests -------------------------------------------------------------------------------------

    def sourcedir_uri(self, content_hash: str) -> str:
        return f"{self.output_path.rstrip('/')}/code/{content_hash}/sourcedir.tar.gz"

    def model_uri(self, job_name: str) -> str:
        return f"{self.output_path.rstrip('/')}/{job_name}/output/model.tar.gz"


# Fetch and run: the node downloads the source archive and starts mlscale's node launcher from it.
BOOTSTRAP = (
    "import os, sys, tarfile, boto3; b, _, k = os.environ['MLSCALE_SOURCEDIR'][5:].partition('/'); "
    "boto3.client('s3').download_file(b, k, 'sourcedir.tar.gz'); "
    "t = tarfile.open('sourcedir.tar.gz'); "
    "t.extractall('code', **({'filter': 'data'} if hasattr(tarfile, 'data_filter') else {})); "
    "os.execv(sys.executable, [sys.executable, 'code/mlscale_batch_node.py'])"
)
LAUNCHER = "mlscale_batch_node.py"


def container_overrides(spec: BatchTrainingSpec, *, job_name: str, sourcedir_uri: str | None) -> dict[str, Any]:
    environment = dict(spec.environment)
    if spec.script_mode:
        command = ["python", "-c", BOOTSTRAP]
        environment.update(
            {
                "MLSCALE_SOURCEDIR": sourcedir_uri,
                "MLSCALE_PROGRAM": spec.entry_point,
                "MLSCALE_HYPERPARAMETERS": json.dumps(spec.hyperparameters, sort_keys=True),
                "MLSCALE_CHANNELS": json.dumps(spec.inputs, sort_keys=True),
                "MLSCALE_MODEL_URI": spec.model_uri(job_name),
                "MLSCALE_DISTRIBUTION": spec.distribution,
            }
        )
    else:
        command = list(spec.command)
    requirements = [{"type": "VCPU", "value": str(spec.vcpus)}, {"type": "MEMORY", "value": str(spec.memory_mib)}]
    if spec.gpus:
        requirements.append({"type": "GPU", "value": str(spec.gpus)})
    return {
        "command": command,
        "resourceRequirements": requirements,
        "environment": [{"name": k, "value": v} for k, v in sorted(environment.items())],
    }


def build_submit_request(
    spec: BatchTrainingSpec, *, job_name: str, job_definition: str, sourcedir_uri: str | None = None
) -> dict[str, Any]:
    """The SubmitJob request for a validated spec."""
    request: dict[str, Any] = {
        "jobName": job_name,
        "jobQueue": spec.job_queue,
        "jobDefinition": job_definition,
        "nodeOverrides": {
            "numNodes": spec.node_count,
            "nodePropertyOverrides": [
                {
                    "targetNodes": "0:",
                    "containerOverrides": container_overrides(spec, job_name=job_name, sourcedir_uri=sourcedir_uri),
                }
            ],
        },
        "retryStrategy": {"attempts": spec.retry_attempts},
        "propagateTags": True,
        "tags": {**spec.tags, "mlscale:job-name": job_name},
    }
    if spec.retry_on_exit:
        request["retryStrategy"]["evaluateOnExit"] = [
            {_CAMEL[key]: (value.upper() if key == "action" else value) for key, value in condition.items()}
            for condition in spec.retry_on_exit
        ]
    if spec.timeout_seconds:
        request["timeout"] = {"attemptDurationSeconds": spec.timeout_seconds}
    return request


_CAMEL = {
    "action": "action",
    "on_exit_code": "onExitCode",
    "on_status_reason": "onStatusReason",
    "on_reason": "onReason",
}


def job_definition_request(spec: BatchTrainingSpec, name: str) -> dict[str, Any]:
    """RegisterJobDefinition for `image`: a multi-node definition whose nodes run the image."""
    container: dict[str, Any] = {
        "image": spec.image,
        "command": ["python", "--version"],
        "resourceRequirements": [
            {"type": "VCPU", "value": str(spec.vcpus)},
            {"type": "MEMORY", "value": str(spec.memory_mib)},
        ],
    }
    if spec.job_role_arn:
        container["jobRoleArn"] = spec.job_role_arn
    return {
        "jobDefinitionName": name,
        "type": "multinode",
        "nodeProperties": {
            "numNodes": spec.node_count,
            "mainNode": spec.main_node_index,
            "nodeRangeProperties": [{"targetNodes": "0:", "container": container}],
        },
        "tags": {"mlscale:managed": "true"},
    }
