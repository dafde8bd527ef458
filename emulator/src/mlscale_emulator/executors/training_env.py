"""The SageMaker training environment contract, as pure functions.

Mirrors aws/sagemaker-training-toolkit and the PyTorch toolkit (SageMaker
Developer Guide, "Amazon SageMaker training storage folders" and the toolkit's
ENVIRONMENT_VARIABLES.md) so a script written for SageMaker runs
unchanged. The emulator gives every host its own /opt/ml root.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NETWORK_INTERFACE = "eth0"
INSTANCE_GROUP = "homogeneousCluster"
DISTRIBUTION_FLAGS = {
    "sagemaker_torch_distributed_enabled": "torch_distributed",
    "sagemaker_pytorch_ddp_enabled": "pytorchddp",
    "sagemaker_distributed_dataparallel_enabled": "smdistributed",
    "sagemaker_mpi_enabled": "mpi",
}


def decode_hyperparameters(raw: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """JSON-decode each value (raw string when that fails); split off the sagemaker_* keys."""
    user: dict[str, Any] = {}
    framework: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        try:
            decoded = json.loads(value)
        except (TypeError, ValueError):
            decoded = value
        (framework if key.startswith("sagemaker_") else user)[key] = decoded
    return user, framework


def command_line_args(user_hps: dict[str, Any]) -> list[str]:
    """Hyperparameters sorted by key as `--key value` (`-k value` for one-character keys)."""
    args: list[str] = []
    for key in sorted(user_hps):
        args += [f"-{key}" if len(key) == 1 else f"--{key}", str(user_hps[key])]
    return args


def distribution_of(framework_hps: dict[str, Any]) -> str | None:
    for flag, name in DISTRIBUTION_FLAGS.items():
        if framework_hps.get(flag) in (True, "true", "True"):
            return name
    return None


def _sm_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class HostLayout:
    """One host's /opt/ml tree (SAGEMAKER_BASE_DIR)."""

    root: Path

    @property
    def config_dir(self) -> Path:
        return self.root / "input" / "config"

    @property
    def data_dir(self) -> Path:
        return self.root / "input" / "data"

    @property
    def model_dir(self) -> Path:
        return self.root / "model"

    @property
    def output_dir(self) -> Path:
        return self.root / "output"

    @property
    def output_data_dir(self) -> Path:
        return self.root / "output" / "data"

    @property
    def intermediate_dir(self) -> Path:
        return self.root / "output" / "intermediate"

    @property
    def code_dir(self) -> Path:
        return self.root / "code"

    @property
    def checkpoint_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def failure_file(self) -> Path:
        return self.output_dir / "failure"

    def channel_dir(self, channel: str) -> Path:
        return self.data_dir / channel

    def create(self, channels: list[str], checkpoints: bool = False) -> None:
        """The instance's /opt/ml; its checkpoints directory only with a CheckpointConfig, as on SageMaker."""
        for path in (
            self.config_dir,
            self.model_dir,
            self.output_data_dir,
            self.intermediate_dir,
            self.code_dir,
            *([self.checkpoint_dir] if checkpoints else []),
            *(self.channel_dir(c) for c in channels),
        ):
            path.mkdir(parents=True, exist_ok=True)


def hosts_for(instance_count: int) -> list[str]:
    return [f"algo-{i}" for i in range(1, instance_count + 1)]


def resource_config(current_host: str, hosts: list[str], instance_type: str) -> dict[str, Any]:
    return {
        "current_host": current_host,
        "current_instance_type": instance_type,
        "current_group_name": INSTANCE_GROUP,
        "hosts": hosts,
        "instance_groups": [{"instance_group_name": INSTANCE_GROUP, "instance_type": instance_type, "hosts": hosts}],
        "network_interface_name": NETWORK_INTERFACE,
    }


def input_data_config(channels: list[dict[str, Any]], default_mode: str) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for channel in channels:
        s3 = channel.get("DataSource", {}).get("S3DataSource", {})
        entry = {
            "TrainingInputMode": channel.get("InputMode") or default_mode,
            "S3DistributionType": s3.get("S3DataDistributionType", "FullyReplicated"),
            "RecordWrapperType": channel.get("RecordWrapperType", "None"),
        }
        if channel.get("ContentType"):
            entry["ContentType"] = channel["ContentType"]
        config[channel["ChannelName"]] = entry
    return config


def write_config_files(
    layout: HostLayout,
    hyperparameters: dict[str, str],
    resources: dict[str, Any],
    data_config: dict[str, Any],
) -> None:
    files = {
        "hyperparameters.json": hyperparameters or {},
        "resourceconfig.json": resources,
        "inputdataconfig.json": data_config,
    }
    for name, content in files.items():
        (layout.config_dir / name).write_text(json.dumps(content, indent=2))


def training_environment(
    *,
    layout: HostLayout,
    job_name: str,
    job_arn: str,
    region: str,
    raw_hyperparameters: dict[str, str],
    resources: dict[str, Any],
    data_config: dict[str, Any],
    request_environment: dict[str, str],
    num_gpus: int,
    num_cpus: int,
) -> dict[str, str]:
    """Every variable the toolkit exports for one host, SM_* included."""
    user_hps, framework_hps = decode_hyperparameters(raw_hyperparameters)
    program = request_environment.get("SAGEMAKER_PROGRAM") or framework_hps.get("sagemaker_program", "")
    channels = sorted(data_config)
    hosts = resources["hosts"]
    current_host = resources["current_host"]
    training_env: dict[str, Any] = {
        "additional_framework_parameters": {},
        "channel_input_dirs": {c: str(layout.channel_dir(c)) for c in channels},
        "current_host": current_host,
        "current_instance_group": INSTANCE_GROUP,
        "current_instance_type": resources["current_instance_type"],
        "framework_module": os.environ.get("SAGEMAKER_TRAINING_MODULE"),
        "hosts": hosts,
        "hyperparameters": user_hps,
        "input_config_dir": str(layout.config_dir),
        "input_data_config": data_config,
        "input_dir": str(layout.root / "input"),
        "instance_groups": [INSTANCE_GROUP],
        "is_hetero": False,
        "is_master": current_host == hosts[0],
        "job_name": job_name,
        "log_level": 20,
        "master_hostname": hosts[0],
        "model_dir": str(layout.model_dir),
        "module_dir": framework_hps.get("sagemaker_submit_directory", ""),
        "module_name": program[:-3] if program.endswith(".py") else program,
        "network_interface_name": NETWORK_INTERFACE,
        "num_cpus": num_cpus,
        "num_gpus": num_gpus,
        "num_neurons": 0,
        "output_data_dir": str(layout.output_data_dir),
        "output_dir": str(layout.output_dir),
        "output_intermediate_dir": str(layout.intermediate_dir),
        "resource_config": resources,
        "user_entry_point": program,
    }
    env = {
        f"SM_{key.upper()}": _sm_value(value)
        for key, value in training_env.items()
        if key not in ("channel_input_dirs", "input_data_config", "resource_config", "hyperparameters")
    }
    env.update(
        {
            "SM_CHANNELS": _sm_value(channels),
            "SM_HPS": _sm_value(user_hps),
            "SM_USER_ARGS": _sm_value(command_line_args(user_hps)),
            "SM_INPUT_DATA_CONFIG": _sm_value(data_config),
            "SM_RESOURCE_CONFIG": _sm_value(resources),
            "SM_FRAMEWORK_PARAMS": _sm_value({}),
            "SM_INSTANCE_GROUPS": _sm_value([INSTANCE_GROUP]),
            "SM_TRAINING_ENV": _sm_value(training_env),
        }
    )
    env.update({f"SM_CHANNEL_{c.upper()}": str(layout.channel_dir(c)) for c in channels})
    env.update({f"SM_HP_{k.upper()}": _sm_value(v) for k, v in user_hps.items()})
    env.update(
        {
            "SAGEMAKER_BASE_DIR": str(layout.root),
            "TRAINING_JOB_NAME": job_name,
            "TRAINING_JOB_ARN": job_arn,
            "AWS_REGION": region,
            "SAGEMAKER_REGION": region,
            "SAGEMAKER_JOB_NAME": job_name,
            "CURRENT_HOST": current_host,
        }
    )
    env.update(request_environment or {})
    return env


def rendezvous_environment(master_port: int) -> dict[str, str]:
    """What the PyTorch toolkit sets on every host.

    SageMaker's MASTER_ADDR is the host name algo-1; the emulator's hosts are
    processes on one machine, so it is loopback, and the port is a free one so
    that jobs can run side by side.
    """
    return {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(master_port),
        "NCCL_IB_DISABLE": "1",
        "NCCL_DEBUG": "WARN",
    }


def entry_command(
    *,
    program: str,
    args: list[str],
    distribution: str | None,
    host_count: int,
    host_index: int,
    procs_per_host: int,
    master_port: int,
    python: str = sys.executable,
) -> list[str]:
    """The command the toolkit runs in /opt/ml/code for this host."""
    if distribution == "torch_distributed":
        # Master flags always: without them torchrun's default port 29500
        # would collide between emulated jobs running at once.
        return [
            python,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            str(host_count),
            "--nproc_per_node",
            str(procs_per_host),
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(master_port),
            "--node_rank",
            str(host_index),
            program,
            *args,
        ]
    if program.endswith(".py"):
        return [python, program, *args]
    return ["/bin/sh", "-c", " ".join([f"./{program}", *args])]
