"""Runs a SageMaker Processing job for real: the container's entrypoint as a local process per instance.

The image is not pulled: its entrypoint runs with the emulator's Python.
Each instance gets its own root standing in for /opt/ml: mounted at /opt/ml
in a private mount namespace where the machine allows it, so scripts that
hard-code /opt/ml/processing/... work; otherwise `/opt/ml/...` in the
entrypoint and arguments is rewritten to the root (SageMaker Developer Guide,
"How Amazon SageMaker Processing runs your processing container image": inputs present before start,
outputs uploaded at the end, the first 1 KB of /opt/ml/output/message becomes ExitMessage).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mlscale_emulator import job_env, settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.executors.processes import (
    container_command,
    drain_output,
    launch,
    opt_ml_namespace_available,
    stop_process_group,
    wait_briefly,
)

log = logging.getLogger(__name__)
LOG_GROUP = "/aws/sagemaker/ProcessingJobs"
OPT_ML = "/opt/ml"


def _now() -> datetime:
    return datetime.now(UTC)


def host_path(root: Path, container_path: str) -> Path:
    """Where a container path under /opt/ml lives for this emulated instance."""
    if not container_path.startswith(OPT_ML + "/"):
        raise ValueError(f"LocalPath must start with /opt/ml/processing/: {container_path}")
    return root / container_path[len(OPT_ML) + 1 :]


class ProcessingRun:
    def __init__(self, job: Any, region: str):
        self.job = job
        self.region = region
        self.job_dir = settings.current().jobs_dir / "processing" / job.processing_job_name
        self._stop = threading.Event()
        self._stop_reason = "Stopped"
        self.thread = threading.Thread(target=self._run, name=f"processing-{job.processing_job_name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.job.processing_job_status = "Stopping"
        self._stop.set()

    def _finish(self, status: str, failure: str | None = None, exit_message: str | None = None) -> None:
        job = self.job
        job.processing_end_time = job.last_modified_time = _now()
        if failure:
            job.failure_reason = failure[:1024]
        if exit_message:
            job.exit_message = exit_message[:1024]
        job.processing_job_status = status
        log.info("processing job %s: %s", job.processing_job_name, status)

    def _run(self) -> None:
        try:
            self._execute()
        except Exception as error:
            log.exception("processing job %s crashed", self.job.processing_job_name)
            self._finish("Failed", failure=f"InternalServerError: {error!r}")

    def _execute(self) -> None:
        job = self.job
        s3 = settings.aws_client("s3", self.region)
        cluster = (job.processing_resources or {}).get("ClusterConfig", {})
        hosts = [f"algo-{i}" for i in range(1, int(cluster.get("InstanceCount", 1)) + 1)]
        roots = [self.job_dir / host for host in hosts]
        for index, (host, root) in enumerate(zip(hosts, roots)):
            failure = self._prepare(s3, root, host, hosts, index)
            if failure:
                return self._finish("Failed", failure=failure)
        job.processing_start_time = _now()
        outcome = self._run_containers(hosts, roots)
        if outcome == "stopped":
            return self._finish("Stopped")
        exit_message = next((m for m in (self._message(r) for r in roots) if m), None)
        if outcome:
            return self._finish("Failed", failure=outcome, exit_message=exit_message)
        for root in roots:
            self._upload_outputs(s3, root)
        self._finish("Completed", exit_message=exit_message)

    def _prepare(self, s3, root: Path, host: str, hosts: list[str], index: int) -> str | None:
        job = self.job
        (root / "config").mkdir(parents=True, exist_ok=True)
        (root / "output").mkdir(parents=True, exist_ok=True)
        config = {
            "ProcessingJobArn": job.arn,
            "ProcessingJobName": job.processing_job_name,
            "AppSpecification": job.app_specification,
            "Environment": job.environment,
            "ProcessingInputs": job.processing_inputs or [],
            "ProcessingOutputConfig": job.processing_output_config or {},
            "ProcessingResources": job.processing_resources,
            "RoleArn": job.role_arn,
            "StoppingCondition": job.stopping_condition,
        }
        (root / "config" / "processingjobconfig.json").write_text(json.dumps(config, indent=2))
        (root / "config" / "resourceconfig.json").write_text(json.dumps({"current_host": host, "hosts": hosts}))
        for item in job.processing_inputs or []:
            source = item.get("S3Input")
            if not source:
                return f"ClientError: input {item.get('InputName')}: only S3Input is emulated"
            keys = s3io.list_keys(s3, source["S3Uri"])
            if not keys:
                return f'ClientError: No S3 objects found under S3 URL "{source["S3Uri"]}" given in input data source.'
            if source.get("S3DataDistributionType") == "ShardedByS3Key":
                keys = keys[index :: len(hosts)]
            target = host_path(root, source["LocalPath"])
            target.mkdir(parents=True, exist_ok=True)
            s3io.download_prefix(s3, source["S3Uri"], target, keys)
        for output in (job.processing_output_config or {}).get("Outputs", []):
            host_path(root, output["S3Output"]["LocalPath"]).mkdir(parents=True, exist_ok=True)
        return None

    def _run_containers(self, hosts: list[str], roots: list[Path]) -> str:
        job = self.job
        app = job.app_specification or {}
        logs = settings.aws_client("logs", self.region)
        epoch = int(time.time())
        processes, shippers = [], []
        for host, root in zip(hosts, roots):
            env = job_env.for_job(self.region, **(job.environment or {}))
            env["SAGEMAKER_PROCESSING_ROOT"] = str(root)
            command = container_command(
                app.get("ContainerEntrypoint") or [],
                app.get("ContainerArguments") or [],
                root,
                opt_ml_namespace_available(),
            )
            if not command:
                return (
                    "ClientError: AppSpecification has no ContainerEntrypoint: the emulator cannot run the image's own"
                )
            shipper = LogShipper(logs, LOG_GROUP, f"{job.processing_job_name}/{host}-{epoch}")
            process, tail = launch(command, cwd=root, env=env, on_line=shipper.write)
            processes.append((process, tail))
            shippers.append(shipper)
        max_runtime = (job.stopping_condition or {}).get("MaxRuntimeInSeconds", 86400)
        deadline = time.monotonic() + int(max_runtime)
        try:
            while True:
                if self._stop.is_set() or time.monotonic() > deadline:
                    return "stopped"
                codes = [p.poll() for p, _ in processes]
                for code, (process, tail) in zip(codes, processes):
                    if code not in (None, 0):
                        drain_output(process)
                        return f"AlgorithmError: ExitCode {code}\n" + "\n".join(tail)[-900:]
                if all(code == 0 for code in codes):
                    return ""
                wait_briefly([p for p, _ in processes])
        finally:
            for process, _ in processes:
                stop_process_group(process, 120)
                drain_output(process)
            for shipper in shippers:
                shipper.close()

    @staticmethod
    def _message(root: Path) -> str | None:
        path = root / "output" / "message"
        return path.read_text(errors="replace")[:1024] if path.exists() else None

    def _upload_outputs(self, s3, root: Path) -> None:
        for output in (self.job.processing_output_config or {}).get("Outputs", []):
            local = host_path(root, output["S3Output"]["LocalPath"])
            if local.exists():
                s3io.upload_directory(s3, local, output["S3Output"]["S3Uri"])
