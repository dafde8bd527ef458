"""Runs a SageMaker training job for real: one process tree per instance, on this machine."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any

from mlscale_emulator import algorithms, job_env, settings
from mlscale_emulator.executors import checkpoints, requirements, s3io, training_env
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.executors.processes import (
    container_command,
    drain_output,
    first_exception_line,
    free_port,
    gpu_count,
    launch,
    opt_ml_namespace_available,
    stop_process_group,
    wait_briefly,
)
from mlscale_emulator.executors.spot import INTERRUPTED, Spot
from mlscale_emulator.executors.utilisation import UtilisationSampler
from mlscale_emulator.sagemaker.requests import metric_pattern

log = logging.getLogger(__name__)

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
STOP_GRACE_SECONDS = 120  # SageMaker sends SIGKILL 120 s after SIGTERM
FAILURE_LIMIT = 1024
# SageMaker publishes a point a minute; emulated jobs last seconds, so sample densely.
METRICS_INTERVAL = float(os.environ.get("MLSCALE_EMULATOR_METRICS_INTERVAL", "2"))


def _now() -> datetime:
    return datetime.now(UTC)


class JobFailed(Exception):
    """The job ends Failed with this FailureReason."""


class TrainingRun:
    """Drives one emulated training job through SageMaker's statuses."""

    def __init__(self, job: Any, region: str):
        self.job = job
        self.region = region
        self.job_dir = settings.current().jobs_dir / "training" / job.training_job_name
        self._stop_requested = threading.Event()
        self._stop_status = "Stopped"
        self._processes: list[subprocess.Popen] = []
        self._metric_patterns = [  # RE2, checked when the job was created
            (d["Name"], metric_pattern(d["Regex"]))
            for d in (job.algorithm_specification or {}).get("MetricDefinitions") or []
        ]
        self._metrics: dict[str, float] = {}
        self._metrics_lock = threading.Lock()
        self.spot = Spot(job)
        self.thread = threading.Thread(target=self._run, name=f"training-{job.training_job_name}", daemon=True)

    # -- control --------------------------------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def stop(self, secondary_status: str = "Stopped") -> None:
        self._stop_status = secondary_status
        self._set_status("Stopping", "Stopping", "Stopping the training job")
        self._stop_requested.set()

    # -- status ---------------------------------------------------------------------------------

    def _set_status(self, status: str, secondary: str, message: str) -> None:
        now = _now()
        job = self.job
        transitions = job.secondary_status_transitions
        if transitions and "EndTime" not in transitions[-1]:
            transitions[-1]["EndTime"] = now
        transitions.append({"Status": secondary, "StartTime": now, "StatusMessage": message})
        job.training_job_status = status
        job.secondary_status = secondary
        job.last_modified_time = now
        log.info("training job %s: %s/%s %s", job.training_job_name, status, secondary, message)

    def _finish(self, status: str, secondary: str, message: str, failure: str | None = None) -> None:
        job = self.job
        job.training_end_time = _now()
        if getattr(job, "training_start_time", None):
            seconds = max(1, round((job.training_end_time - job.training_start_time).total_seconds()))
            job.training_time_in_seconds = seconds
            job.billable_time_in_seconds = self.spot.billable(seconds)
        if failure:
            job.failure_reason = failure[:FAILURE_LIMIT]
        with self._metrics_lock:
            job.final_metric_data_list = [
                {"MetricName": name, "Value": value, "Timestamp": job.training_end_time}
                for name, value in self._metrics.items()
            ]
        self._set_status(status, secondary, message)
        self.job.secondary_status_transitions[-1]["EndTime"] = job.training_end_time

    # -- the job ----------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._execute()
        except JobFailed as failed:
            self._finish("Failed", "Failed", "Training job failed", failure=str(failed))
        except Exception as error:  # an emulator bug must still end the job, with the reason
            log.exception("training job %s crashed", self.job.training_job_name)
            self._finish("Failed", "Failed", "Training job failed", failure=f"InternalServerError: {error!r}")

    def _execute(self) -> None:
        job = self.job
        s3 = settings.aws_client("s3", self.region)
        hosts = training_env.hosts_for(int(job.resource_config["InstanceCount"]))
        layouts = [training_env.HostLayout(self.job_dir / host) for host in hosts]

        self._set_status("InProgress", "Downloading", "Downloading input data")
        self._prepare_hosts(s3, hosts, layouts)
        if self._stop_requested.is_set():
            return self._finish("Stopped", self._stop_status, "Training job stopped")

        self._set_status("InProgress", "Training", "Training image download completed. Training in progress.")
        job.training_start_time = _now()
        outcome = self._train(hosts, layouts)
        while outcome is INTERRUPTED and self.spot.restart(self, s3, layouts):
            outcome = self._train(hosts, layouts)

        if outcome is None or outcome is INTERRUPTED or self._stop_requested.is_set():
            # SageMaker still uploads what the script saved before it was stopped.
            self._upload_outputs(s3, layouts[0])
            return self._finish("Stopped", self._stop_status, "Training job stopped")
        if outcome:
            raise JobFailed(outcome)

        self._set_status("InProgress", "Uploading", "Uploading generated training model")
        self._upload_outputs(s3, layouts[0])
        for layout in layouts:
            checkpoints.sync_up(s3, self.job, layout)
        self._finish("Completed", "Completed", "Training job completed")

    def _prepare_hosts(self, s3, hosts: list[str], layouts: list[training_env.HostLayout]) -> None:
        job = self.job
        channels = job.input_data_config or []
        default_mode = job.algorithm_specification.get("TrainingInputMode", "File")
        data_config = training_env.input_data_config(channels, default_mode)
        user_hps, framework_hps = training_env.decode_hyperparameters(job.hyper_parameters or {})
        instance_type = job.resource_config.get("InstanceType", "ml.m5.large")
        self.job_dir.mkdir(parents=True, exist_ok=True)

        for channel in channels:
            self._check_channel(channel, default_mode)
        for index, (host, layout) in enumerate(zip(hosts, layouts)):
            layout.create(list(data_config), checkpoints=bool(job.checkpoint_config))
            training_env.write_config_files(
                layout, job.hyper_parameters, training_env.resource_config(host, hosts, instance_type), data_config
            )
            submit_dir = framework_hps.get("sagemaker_submit_directory")
            if submit_dir and str(submit_dir).startswith("s3://") and not any(layout.code_dir.iterdir()):
                s3io.download_and_extract(s3, submit_dir, layout.code_dir)
            for channel in channels:
                self._stage_channel(s3, channel, layout, index, len(hosts))
            checkpoints.sync_down(s3, self.job, layout)
        self._install_requirements(layouts)

    def _stage_channel(self, s3, channel: dict[str, Any], layout, index: int, host_count: int) -> None:
        name = channel["ChannelName"]
        source = channel["DataSource"]
        if "FileSystemDataSource" in source:
            # A mounted file system: the channel is the directory itself, as a mount would be.
            from mlscale_emulator.fsx.models import FSxError
            from mlscale_emulator.fsx.service import resolve_directory

            fs = source["FileSystemDataSource"]
            try:
                target = resolve_directory(fs["FileSystemId"], fs["DirectoryPath"])
            except FSxError as error:
                raise JobFailed(f"ClientError: channel {name}: {error.message}") from None
            if not target.is_dir():
                raise JobFailed(
                    f"ClientError: channel {name}: {fs['DirectoryPath']} does not exist on {fs['FileSystemId']}"
                )
            layout.channel_dir(name).rmdir()
            layout.channel_dir(name).symlink_to(target, target_is_directory=True)
            return
        uri = source["S3DataSource"]["S3Uri"]
        keys = s3io.list_keys(s3, uri)
        if not keys:
            raise JobFailed(
                f'ClientError: No S3 objects found under S3 URL "{uri}" given in input data source. '
                "Please ensure that the bucket exists in the selected region, that objects exist under "
                "that S3 prefix, and that the role has s3:ListBucket and s3:GetObject permissions."
            )
        if source["S3DataSource"].get("S3DataDistributionType") == "ShardedByS3Key":
            keys = keys[index::host_count]
        s3io.download_prefix(s3, uri, layout.channel_dir(name), keys)

    def _check_channel(self, channel: dict[str, Any], default_mode: str) -> None:
        name = channel.get("ChannelName")
        mode = channel.get("InputMode") or default_mode
        source = channel.get("DataSource", {})
        if "FileSystemDataSource" in source:
            fs = source["FileSystemDataSource"]
            if fs.get("FileSystemType") not in ("FSxLustre", "EFS"):
                raise JobFailed(f"ClientError: channel {name}: FileSystemType must be FSxLustre or EFS")
            if not (self.job.vpc_config or {}).get("Subnets"):
                raise JobFailed(
                    f"ClientError: channel {name}: a FileSystemDataSource needs the job's VpcConfig "
                    "(subnets in the file system's Availability Zone)"
                )
            if fs.get("FileSystemType") == "EFS":
                raise JobFailed(f"ClientError: channel {name}: EFS file systems are not emulated; use FSxLustre")
            return
        if "S3DataSource" not in source:
            raise JobFailed(f"ClientError: channel {name}: only S3DataSource and FileSystemDataSource are emulated")
        if source["S3DataSource"].get("S3DataType", "S3Prefix") != "S3Prefix":
            raise JobFailed(f"ClientError: channel {name}: only S3DataType S3Prefix is emulated")
        if mode not in ("File", "FastFile"):
            raise JobFailed(f"ClientError: channel {name}: input mode {mode} is not emulated; use File or FastFile")

    def _install_requirements(self, layouts: list[training_env.HostLayout]) -> None:
        requirements_file = layouts[0].code_dir / "requirements.txt"
        if requirements_file.exists() and (error := requirements.install(requirements_file, self.job_dir / "venv")):
            raise JobFailed(f"InstallRequirementsError:\n{error}")

    # -- processes --------------------------------------------------------------------------------

    def _train(self, hosts: list[str], layouts: list[training_env.HostLayout]) -> Any:
        """Run every host; '' on success, the failure text on failure, None when stopped, or INTERRUPTED."""
        job = self.job
        self._processes = []
        user_hps, framework_hps = training_env.decode_hyperparameters(job.hyper_parameters or {})
        request_env = dict(job.environment or {}) if hasattr(job, "environment") else {}
        spec = job.algorithm_specification
        # ContainerEntrypoint replaces the image's entry point (the SDK v3's ModelTrainer sends its drivers so)
        entrypoint = spec.get("ContainerEntrypoint")
        program = request_env.get("SAGEMAKER_PROGRAM") or framework_hps.get("sagemaker_program")
        algorithm = algorithms.builtin(spec.get("TrainingImage", ""), program)
        if entrypoint:
            pass  # the request names what runs: no script to look for
        elif algorithm in algorithms.RUNS:
            program = str(algorithms.RUNS[algorithm])  # the algorithm's container runs its own entry point
        elif not program:
            raise JobFailed(
                "ClientError: no entry point: set the sagemaker_program hyperparameter (or "
                f"SAGEMAKER_PROGRAM); {algorithms.WHAT_RUNS}"
            )
        elif not (layouts[0].code_dir / program).exists():
            raise JobFailed(f"ClientError: entry point {program} not found in the submitted source directory")
        distribution = training_env.distribution_of(framework_hps)
        gpus = gpu_count()
        procs_per_host = max(1, gpus) if distribution == "torch_distributed" else 1
        master_port = free_port()
        instance_type = job.resource_config.get("InstanceType", "ml.m5.large")
        logs = settings.aws_client("logs", self.region)
        epoch = int(time.time())
        shippers, stderr_tails = [], []
        for index, (host, layout) in enumerate(zip(hosts, layouts)):
            env = self._process_env(layout, host, hosts, instance_type, request_env, gpus, len(hosts) * procs_per_host)
            env.update(training_env.rendezvous_environment(master_port))
            if entrypoint:  # its scripts name /opt/ml: each host sees its own root there, as in its container
                command = container_command(
                    entrypoint, spec.get("ContainerArguments") or [], layout.root, opt_ml_namespace_available()
                )
            else:
                command = training_env.entry_command(
                    program=program,
                    args=[] if algorithm in algorithms.RUNS else training_env.command_line_args(user_hps),
                    distribution=distribution,
                    host_count=len(hosts),
                    host_index=index,
                    procs_per_host=procs_per_host,
                    master_port=master_port,
                )
            shipper = LogShipper(logs, LOG_GROUP, f"{job.training_job_name}/{host}-{epoch}")
            process, tail = launch(command, cwd=layout.code_dir, env=env, on_line=self._line_handler(shipper))
            process.command = command  # type: ignore[attr-defined]
            self._processes.append(process)
            shippers.append(shipper)
            stderr_tails.append(tail)

        sampler = UtilisationSampler(
            settings.aws_client("cloudwatch", self.region),
            job.training_job_name,
            {host: p.pid for host, p in zip(hosts, self._processes)},
            self.job_dir,
            interval=METRICS_INTERVAL,
        ).start()
        started = time.monotonic()
        try:
            return self._wait(layouts, stderr_tails)
        finally:
            self.spot.ran_seconds += time.monotonic() - started
            sampler.stop()
            for process in self._processes:
                stop_process_group(process, STOP_GRACE_SECONDS)
                drain_output(process)
            for shipper in shippers:
                shipper.close()

    def _process_env(self, layout, host, hosts, instance_type, request_env, gpus, total_procs) -> dict[str, str]:
        job = self.job
        env = job_env.base()
        env.update(
            training_env.training_environment(
                layout=layout,
                job_name=job.training_job_name,
                job_arn=job.arn,
                region=self.region,
                raw_hyperparameters=job.hyper_parameters or {},
                resources=training_env.resource_config(host, hosts, instance_type),
                data_config=training_env.input_data_config(
                    job.input_data_config or [], job.algorithm_specification.get("TrainingInputMode", "File")
                ),
                request_environment=request_env,
                num_gpus=gpus,
                num_cpus=os.cpu_count() or 1,
            )
        )
        sites = requirements.site_packages(self.job_dir / "venv")
        # what the job's own `pip install` adds (the SDK v3's drivers install requirements.txt so) goes here,
        # not into the emulator's Python, which runs the job
        env["PIP_TARGET"] = str(self.job_dir / "pip-target")
        env["PYTHONPATH"] = job_env.python_path(
            *(p for p in (layout.code_dir, *sites) if p.exists()), env["PIP_TARGET"]
        )
        env.update(job_env.LOOPBACK)
        env["PYTHONUNBUFFERED"] = "1"
        # The job's own AWS calls reach the emulator, as its role's calls would reach AWS.
        env.update(job_env.emulator_access(self.region))
        # Emulated instances share this machine's cores; do not let each one take them all.
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // total_procs)))
        return env

    def _line_handler(self, shipper: LogShipper):
        def on_line(line: str) -> None:
            shipper.write(line)
            for name, pattern in self._metric_patterns:
                match = pattern.search(line)
                if match:
                    try:
                        value = float(match.group(1))
                    except (IndexError, ValueError):
                        continue
                    with self._metrics_lock:
                        self._metrics[name] = value

        return on_line

    def _wait(self, layouts, stderr_tails) -> Any:
        max_runtime = (self.job.stopping_condition or {}).get("MaxRuntimeInSeconds", 86400)
        deadline = time.monotonic() + int(max_runtime)
        while True:
            if self._stop_requested.is_set():
                return None
            if self.spot.reclaim.is_set():
                return INTERRUPTED
            if time.monotonic() > deadline:
                self.stop("MaxRuntimeExceeded")
                return None
            codes = [p.poll() for p in self._processes]
            failed = [index for index, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                # a host that said why (its failure file) over one that failed because its peer left
                index = next((i for i in failed if layouts[i].failure_file.exists()), failed[0])
                drain_output(self._processes[index])  # the traceback, for the FailureReason
                return self._failure_text(index, codes[index], layouts[index], stderr_tails[index])
            if all(code == 0 for code in codes):
                return ""
            wait_briefly(self._processes)

    def _failure_text(self, index: int, code: int, layout, tail: deque) -> str:
        if layout.failure_file.exists():
            text = layout.failure_file.read_text(errors="replace")
            if text.startswith(("ClientError: ", "AlgorithmError: ")):  # a built-in algorithm's own verdict
                return text
        else:
            message = "\n".join(tail)[-600:]
            cause = first_exception_line(tail)
            if cause and not message.startswith(cause):
                message = f"{cause}\n...\n{message}"
            if code in (137, -9):
                message = "OutOfMemory: Process killed by SIGKILL (signal 9)\n" + message
            command = " ".join(self._processes[index].command)  # type: ignore[attr-defined]
            text = f'ExecuteUserScriptError:\nExitCode {code}\nErrorMessage "{message}"\nCommand "{command}"'
            layout.failure_file.write_text(text)
        return "AlgorithmError: " + text

    # -- outputs ----------------------------------------------------------------------------------

    def _upload_outputs(self, s3, leader: training_env.HostLayout) -> None:
        job = self.job
        base = f"{job.output_data_config['S3OutputPath'].rstrip('/')}/{job.training_job_name}/output"
        for folder, name in ((leader.model_dir, "model.tar.gz"), (leader.output_data_dir, "output.tar.gz")):
            if folder.exists():
                archive = s3io.tar_directory(folder, self.job_dir / name)
                s3io.upload_file(s3, archive, f"{base}/{name}")
        job.model_artifacts = {"S3ModelArtifacts": f"{base}/model.tar.gz"}
