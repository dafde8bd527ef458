"""TrainingSpec: a SageMaker script-mode training job, validated, and its CreateTrainingJob request."""

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
from mlscale.specs.rules import require

DISTRIBUTIONS = {
    "torch_distributed": {"sagemaker_torch_distributed_enabled": True},
    "pytorchddp": {"sagemaker_pytorch_ddp_enabled": True},
    "smdistributed": {"sagemaker_distributed_dataparallel_enabled": True},
    "mpi": {"sagemaker_mpi_enabled": True},
}
INPUT_MODES = ("File", "FastFile")
MAX_RUNTIME_LIMIT = 28 * 24 * 3600  # 28 days
CHANNEL_NAME = re.compile(r"^[A-Za-z0-9\.\-_]{1,64}\Z")
ENV_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]{0,511}\Z")


@dataclass
class InputChannel:
    """One S3 input channel; a plain "s3://..." string in TrainingSpec.inputs means the defaults."""

    s3_uri: str
    input_mode: str | None = None
    distribution: str = "FullyReplicated"
    content_type: str | None = None

    template_fields = ("s3_uri",)

    def to_request(self, name: str) -> dict[str, Any]:
        channel: dict[str, Any] = {
            "ChannelName": name,
            "DataSource": {
                "S3DataSource": {
                    "S3DataType": "S3Prefix",
                    "S3Uri": self.s3_uri,
                    "S3DataDistributionType": self.distribution,
                }
            },
        }
        if self.input_mode:
            channel["InputMode"] = self.input_mode
        if self.content_type:
            channel["ContentType"] = self.content_type
        return channel


@dataclass
class FileSystemChannel:
    """A channel read from a mounted file system (FSx for Lustre, EFS); the job needs a VpcConfig."""

    file_system_id: str
    directory_path: str  # for Lustre: /<mount name>/<path>
    file_system_type: str = "FSxLustre"
    access_mode: str = "ro"

    template_fields = ("file_system_id", "directory_path")

    def to_request(self, name: str) -> dict[str, Any]:
        return {
            "ChannelName": name,
            "DataSource": {
                "FileSystemDataSource": {
                    "FileSystemId": self.file_system_id,
                    "FileSystemType": self.file_system_type,
                    "DirectoryPath": self.directory_path,
                    "FileSystemAccessMode": self.access_mode,
                }
            },
        }


def as_channel(value: Any) -> InputChannel | FileSystemChannel:
    """A channel from a spec value: an S3 URI, a channel object, or its dict form (as XCom carries it)."""
    if isinstance(value, (InputChannel, FileSystemChannel)):
        return value
    if isinstance(value, dict):
        return FileSystemChannel(**value) if "file_system_id" in value else InputChannel(**value)
    return InputChannel(str(value))


@dataclass
class TrainingSpec:
    """What a script-mode training job needs. Templated fields render before validation."""

    entry_point: str
    source_dir: str
    role_arn: str
    output_path: str
    image_uri: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    py_version: str | None = None
    instance_type: str = "ml.m5.xlarge"
    instance_count: int = 1
    volume_size_gb: int = 30
    distribution: str | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, str | dict | InputChannel | FileSystemChannel] = field(default_factory=dict)
    input_mode: str = "File"
    metric_definitions: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    max_runtime_seconds: int = 24 * 3600
    use_spot: bool = False
    max_wait_seconds: int | None = None
    checkpoint_s3_uri: str | None = None
    max_retry_attempts: int | None = None
    subnets: list[str] = field(default_factory=list)
    security_group_ids: list[str] = field(default_factory=list)
    volume_kms_key_id: str | None = None
    output_kms_key_id: str | None = None
    enable_network_isolation: bool = False
    encrypt_inter_container_traffic: bool = False
    tags: dict[str, str] = field(default_factory=dict)
    code_location: str | None = None

    template_fields = (
        "hyperparameters",
        "inputs",
        "output_path",
        "role_arn",
        "source_dir",
        "image_uri",
        "instance_type",
        "instance_count",
        "distribution",
        "input_mode",
        "checkpoint_s3_uri",
        "subnets",
        "security_group_ids",
        "environment",
        "tags",
        "code_location",
    )

    def channels(self) -> dict[str, InputChannel | FileSystemChannel]:
        return {name: as_channel(c) for name, c in self.inputs.items()}

    # -- validation ----------------------------------------------------------------------------------

    def validate(self, check_files: bool = True) -> None:
        """Raise SpecError for the first broken rule. No AWS call is made."""
        coerce_fields(self)
        require(bool(self.entry_point), "entry_point", "is required")
        require(self.entry_point.endswith((".py", ".sh")), "entry_point", "must be a .py or .sh file", self.entry_point)
        require(
            not self.entry_point.startswith("/") and ".." not in self.entry_point.split("/"),
            "entry_point",
            "must be a path relative to source_dir, without '..' (it runs from inside source_dir)",
            self.entry_point,
        )
        if check_files:
            require(Path(self.source_dir).is_dir(), "source_dir", "must be an existing directory", self.source_dir)
            require(
                (Path(self.source_dir) / self.entry_point).is_file(),
                "entry_point",
                f"must be a file inside source_dir {self.source_dir}",
                self.entry_point,
            )
        rules.role_arn(self.role_arn)
        rules.s3_uri(self.output_path, "output_path")
        if self.code_location is not None:
            rules.s3_uri(self.code_location, "code_location")
        self._validate_image()
        rules.instance_type(self.instance_type, "instance_type", "TrainingInstanceType")
        rules.in_range(self.instance_count, "instance_count", 1, 100)
        rules.in_range(self.volume_size_gb, "volume_size_gb", 1, 16384)
        require(
            self.distribution in (None, *DISTRIBUTIONS),
            "distribution",
            f"must be one of {sorted(DISTRIBUTIONS)} or None",
            self.distribution,
        )
        self._validate_hyperparameters()
        self._validate_inputs()
        rules.in_range(self.max_runtime_seconds, "max_runtime_seconds", 1, MAX_RUNTIME_LIMIT)
        self._validate_spot()
        self._validate_metrics()
        self._validate_environment()
        require(
            bool(self.subnets) == bool(self.security_group_ids),
            "subnets",
            "subnets and security_group_ids go together (VpcConfig needs both)",
        )
        if self.max_retry_attempts is not None:
            rules.in_range(self.max_retry_attempts, "max_retry_attempts", 1, 30)
        rules.tags(self.tags)

    def _validate_image(self) -> None:
        require(not (self.image_uri and self.framework), "image_uri", "give image_uri or framework, not both")
        require(
            bool(self.image_uri or self.framework), "image_uri", "give image_uri, or framework with framework_version"
        )
        if self.framework:
            require(bool(self.framework_version), "framework_version", f"is required with framework={self.framework!r}")

    def _validate_hyperparameters(self) -> None:
        require(isinstance(self.hyperparameters, dict), "hyperparameters", "must be a mapping")
        require(
            len(self.hyperparameters) <= 90,
            "hyperparameters",
            "at most 100 per job, 10 of them reserved for sagemaker_*",
            len(self.hyperparameters),
        )
        for key, value in self.hyperparameters.items():
            name = f"hyperparameters[{key!r}]"
            require(isinstance(key, str) and 1 <= len(key) <= 256, name, "keys are strings of 1-256 characters")
            require(not key.startswith("sagemaker_"), name, "the sagemaker_ prefix is reserved for the toolkit")
            try:
                encoded = json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise SpecError(
                    name,
                    f"must be JSON: a string, number, boolean, list or mapping, not NaN or infinity ({error})",
                    value,
                ) from None
            require(len(encoded) <= 2500, name, "values are at most 2500 characters once JSON-encoded")

    def _validate_inputs(self) -> None:
        require(
            self.input_mode in INPUT_MODES,
            "input_mode",
            f"must be one of {INPUT_MODES} (Pipe is replaced by FastFile)",
            self.input_mode,
        )
        require(len(self.inputs) <= 20, "inputs", "at most 20 channels", len(self.inputs))
        try:
            channels = self.channels()
        except TypeError as error:
            raise SpecError("inputs", f"a channel dict has unknown keys: {error}") from None
        for name, channel in channels.items():
            require(
                bool(CHANNEL_NAME.match(name)) and name.strip(".") != "",
                f"inputs[{name!r}]",
                "channel names are 1-64 characters of letters, digits, '.', '-' and '_', not only dots "
                "(the channel is the directory /opt/ml/input/data/<name>)",
            )
            if isinstance(channel, FileSystemChannel):
                require(
                    bool(self.subnets),
                    f"inputs[{name!r}]",
                    "a file system channel needs subnets and security_group_ids (VpcConfig)",
                )
                require(
                    channel.file_system_type in ("FSxLustre", "EFS"),
                    f"inputs[{name!r}].file_system_type",
                    "must be FSxLustre or EFS",
                    channel.file_system_type,
                )
                require(
                    channel.directory_path.startswith("/"),
                    f"inputs[{name!r}].directory_path",
                    "must be an absolute path (/<mount name>/... for Lustre)",
                    channel.directory_path,
                )
                require(channel.access_mode in ("ro", "rw"), f"inputs[{name!r}].access_mode", "must be ro or rw")
                continue
            rules.s3_uri(channel.s3_uri, f"inputs[{name!r}]")
            require(
                channel.input_mode in (None, *INPUT_MODES),
                f"inputs[{name!r}].input_mode",
                f"must be one of {INPUT_MODES}",
                channel.input_mode,
            )
            require(
                channel.distribution in ("FullyReplicated", "ShardedByS3Key"),
                f"inputs[{name!r}].distribution",
                "must be FullyReplicated or ShardedByS3Key",
                channel.distribution,
            )

    def _validate_spot(self) -> None:
        if self.checkpoint_s3_uri:
            rules.s3_uri(self.checkpoint_s3_uri, "checkpoint_s3_uri")
        if not self.use_spot:
            require(self.max_wait_seconds is None, "max_wait_seconds", "only applies with use_spot=True")
            return
        require(
            bool(self.checkpoint_s3_uri),
            "checkpoint_s3_uri",
            "is required with use_spot=True: an interrupted spot job resumes from its checkpoints",
        )
        wait = self.max_wait_seconds if self.max_wait_seconds is not None else self.max_runtime_seconds
        require(
            wait >= self.max_runtime_seconds,
            "max_wait_seconds",
            f"must be >= max_runtime_seconds ({self.max_runtime_seconds})",
            wait,
        )

    def _validate_metrics(self) -> None:
        require(len(self.metric_definitions) <= 40, "metric_definitions", "at most 40 metrics")
        for name, regex in self.metric_definitions.items():
            label = f"metric_definitions[{name!r}]"
            require(isinstance(name, str) and 1 <= len(name) <= 255, label, "names are 1-255 characters")
            require(isinstance(regex, str) and 1 <= len(regex) <= 500, label, "regexes are 1-500 characters")
            try:
                groups = compile_metric(regex).groups
            except MetricRegexError as error:
                raise SpecError(label, str(error), regex) from None
            require(groups == 1, label, "needs exactly one capture group: the metric's value", regex)

    def _validate_environment(self) -> None:
        require(len(self.environment) <= 100, "environment", "at most 100 variables")
        for key, value in self.environment.items():
            require(
                bool(ENV_KEY.match(str(key))),
                f"environment[{key!r}]",
                "names match [a-zA-Z_][a-zA-Z0-9_]* and are at most 512 characters",
            )
            require(
                isinstance(value, str) and len(value) <= 512,
                f"environment[{key!r}]",
                "values are strings of at most 512 characters",
                value,
            )

    # -- the request ----------------------------------------------------------------------------------

    def sourcedir_uri(self, content_hash: str) -> str:
        """Where the packed source goes: keyed by its content, so unchanged code is uploaded once."""
        base = (self.code_location or f"{self.output_path.rstrip('/')}/code").rstrip("/")
        return f"{base}/{content_hash}/sourcedir.tar.gz"


def build_training_request(
    spec: TrainingSpec, *, job_name: str, image_uri: str, sourcedir_uri: str, region: str
) -> dict[str, Any]:
    """The CreateTrainingJob request for a validated spec; what the SageMaker SDK would send."""
    hyperparameters = {key: json.dumps(value) for key, value in spec.hyperparameters.items()}
    framework_hps: dict[str, Any] = {
        "sagemaker_program": spec.entry_point,
        "sagemaker_submit_directory": sourcedir_uri,
        "sagemaker_container_log_level": 20,
        "sagemaker_job_name": job_name,
        "sagemaker_region": region,
        **DISTRIBUTIONS.get(spec.distribution or "", {}),
    }
    hyperparameters.update({key: json.dumps(value) for key, value in framework_hps.items()})

    algorithm: dict[str, Any] = {"TrainingImage": image_uri, "TrainingInputMode": spec.input_mode}
    if spec.metric_definitions:
        algorithm["MetricDefinitions"] = [{"Name": n, "Regex": r} for n, r in spec.metric_definitions.items()]
    resources: dict[str, Any] = {
        "InstanceType": spec.instance_type,
        "InstanceCount": spec.instance_count,
        "VolumeSizeInGB": spec.volume_size_gb,
    }
    if spec.volume_kms_key_id:
        resources["VolumeKmsKeyId"] = spec.volume_kms_key_id
    output: dict[str, Any] = {"S3OutputPath": spec.output_path}
    if spec.output_kms_key_id:
        output["KmsKeyId"] = spec.output_kms_key_id
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": spec.max_runtime_seconds}

    request: dict[str, Any] = {
        "TrainingJobName": job_name,
        "AlgorithmSpecification": algorithm,
        "RoleArn": spec.role_arn,
        "HyperParameters": hyperparameters,
        "OutputDataConfig": output,
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        "EnableNetworkIsolation": spec.enable_network_isolation,
        "EnableInterContainerTrafficEncryption": spec.encrypt_inter_container_traffic,
        "EnableManagedSpotTraining": spec.use_spot,
    }
    if spec.inputs:
        request["InputDataConfig"] = [channel.to_request(name) for name, channel in spec.channels().items()]
    if spec.use_spot:
        stopping["MaxWaitTimeInSeconds"] = spec.max_wait_seconds or spec.max_runtime_seconds
    if spec.checkpoint_s3_uri:
        request["CheckpointConfig"] = {"S3Uri": spec.checkpoint_s3_uri, "LocalPath": "/opt/ml/checkpoints"}
    if spec.environment:
        request["Environment"] = dict(spec.environment)
    if spec.subnets:
        request["VpcConfig"] = {"Subnets": list(spec.subnets), "SecurityGroupIds": list(spec.security_group_ids)}
    if spec.max_retry_attempts:
        request["RetryStrategy"] = {"MaximumRetryAttempts": spec.max_retry_attempts}
    if spec.tags:
        request["Tags"] = [{"Key": k, "Value": v} for k, v in spec.tags.items()]
    return request
