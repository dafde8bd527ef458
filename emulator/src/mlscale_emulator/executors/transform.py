"""Runs a Batch Transform job for real: a local model server per instance, fed the input objects.

SplitType None sends whole objects, Line splits them; SingleRecord sends one
record per request, MultiRecord packs records up to MaxPayloadInMB; outputs
are written as <input key>.out under S3OutputPath (AssembleWith Line adds a
newline after each response); instances split the input objects between them.
Request settings win, then the container's /execution-parameters, then the
defaults (SageMaker Developer Guide, "Use your own inference code with batch transform").
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mlscale_emulator import job_env, settings
from mlscale_emulator.executors import model_code, s3io
from mlscale_emulator.executors.data_processing import FilterError, filter_input, join_and_filter
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.executors.processes import free_port, launch, stop_process_group

log = logging.getLogger(__name__)
LOG_GROUP = "/aws/sagemaker/TransformJobs"
STARTUP_SECONDS = 120


class TransformFailed(Exception):
    pass


def split_records(body: bytes, split_type: str) -> list[bytes]:
    if split_type in (None, "None"):
        return [body]
    if split_type == "Line":
        return [line for line in body.split(b"\n") if line.strip()]
    raise TransformFailed(f"ClientError: SplitType {split_type} is not emulated; use None or Line")


def batches(records: list[bytes], strategy: str, max_payload_mb: int, split_type: str) -> list[bytes]:
    """Request bodies: one per record, or records packed up to the payload limit (0 = no limit)."""
    if strategy != "MultiRecord" or split_type in (None, "None"):
        return records
    limit = max_payload_mb * 1024 * 1024 if max_payload_mb else float("inf")
    packed, current, size = [], [], 0
    for record in records:
        if len(record) > limit:
            raise TransformFailed(
                f"ClientError: a record of {len(record)} bytes exceeds MaxPayloadInMB {max_payload_mb}"
            )
        if current and size + len(record) + 1 > limit:
            packed.append(b"\n".join(current))
            current, size = [], 0
        current.append(record)
        size += len(record) + 1
    if current:
        packed.append(b"\n".join(current))
    return packed


class ModelContainer:
    """One instance's model server process."""

    def __init__(
        self, model_dir: Path, code_dir: Path | None, env: dict[str, str], shipper: LogShipper, image: str = ""
    ):
        self.port = free_port()
        # the image is not pulled; its name says which framework's inference toolkit (default handlers) it runs
        command = [
            sys.executable,
            "-m",
            "mlscale_emulator.serving",
            "--model-dir",
            str(model_dir),
            "--port",
            str(self.port),
            "--image",
            image,
        ] + (["--code-dir", str(code_dir)] if code_dir else [])
        self.process, self.tail = launch(command, cwd=model_dir, env=env, on_line=shipper.write)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, seconds: float = STARTUP_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                time.sleep(0.2)
                raise TransformFailed(
                    "ClientError: the model server exited while loading the model:\n" + "\n".join(list(self.tail)[-8:])
                )
            try:
                with urllib.request.urlopen(f"{self.url}/ping", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)  # a local ping is cheap; each step of waiting here delays the whole job
        raise TransformFailed(f"ClientError: the model server did not answer /ping within {seconds:.0f} s")

    def execution_parameters(self) -> dict:
        try:
            with urllib.request.urlopen(f"{self.url}/execution-parameters", timeout=5) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError):
            return {}

    def post(self, body: bytes, content_type: str | None, accept: str | None, timeout: float) -> tuple[int, bytes, str]:
        """POST /invocations: (status, body, content type); an error status is returned, not raised."""
        request = urllib.request.Request(f"{self.url}/invocations", data=body, method="POST")
        if content_type:
            request.add_header("Content-Type", content_type)
        if accept:
            request.add_header("Accept", accept)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read(), response.headers.get("Content-Type", accept or "")
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers.get("Content-Type", "")

    def invoke(self, body: bytes, content_type: str | None, accept: str | None) -> bytes:
        """One Batch Transform request (up to 600 s); an error answer fails the job with its message."""
        try:
            status, answer, _ = self.post(body, content_type, accept, timeout=600)
        except (urllib.error.URLError, ConnectionError) as error:
            raise TransformFailed(f"ClientError: the model server went away: {error}") from None
        if status != 200:
            detail = answer.decode(errors="replace")
            try:
                detail = json.loads(detail).get("error-message", detail)
            except ValueError:
                pass
            raise TransformFailed(f"ClientError: the model answered {status}: {detail[:600]}")
        return answer

    def stop(self) -> None:
        stop_process_group(self.process, 10)


class TransformRun:
    def __init__(self, job: Any, region: str):
        self.job, self.region = job, region
        self.job_dir = settings.current().jobs_dir / "transform" / job.transform_job_name
        self._stop = threading.Event()
        self._containers: list[ModelContainer] = []
        self.thread = threading.Thread(target=self._run, name=f"transform-{job.transform_job_name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.job.transform_job_status = "Stopping"
        self._stop.set()
        for model_server in list(self._containers):  # in-flight requests end now, not when they finish
            model_server.stop()

    def _finish(self, status: str, failure: str = "") -> None:
        now = datetime.now(UTC)
        self.job.transform_end_time = self.job.last_modified_time = now
        self.job.failure_reason = failure[:1024]
        self.job.transform_job_status = status
        log.info("transform job %s: %s %s", self.job.transform_job_name, status, failure[:200])

    def _run(self) -> None:
        try:
            self._execute()
            self._finish("Stopped" if self._stop.is_set() else "Completed")
        except Exception as error:
            if self._stop.is_set():  # the requests cut short by the stop
                return self._finish("Stopped")
            if not isinstance(error, TransformFailed):
                log.exception("transform job crashed")
                error = f"InternalServerError: {error!r}"
            self._finish("Failed", str(error))

    def _execute(self) -> None:
        job = self.job
        s3 = settings.aws_client("s3", self.region)
        sagemaker = settings.aws_client("sagemaker", self.region)
        try:
            model = sagemaker.describe_model(ModelName=job.model_name)
        except Exception as error:  # noqa: BLE001 - the service's not-found message is the reason
            raise TransformFailed(f"ClientError: model {job.model_name}: {error}") from None
        container = model.get("PrimaryContainer") or (model.get("Containers") or [{}])[0]
        source = job.transform_input["DataSource"]["S3DataSource"]
        keys = s3io.list_keys(s3, source["S3Uri"])
        if not keys:
            raise TransformFailed(f'ClientError: No S3 objects found under S3 URL "{source["S3Uri"]}"')
        count = int((job.transform_resources or {}).get("InstanceCount", 1))
        logs = settings.aws_client("logs", self.region)
        containers, shippers = self._containers, []
        try:
            for index in range(count):
                model_dir, code_dir = model_code.unpack(s3, container, self.job_dir / f"instance-{index}")
                shipper = LogShipper(logs, LOG_GROUP, f"{job.transform_job_name}/i-emulated{index:04d}")
                shippers.append(shipper)
                containers.append(
                    ModelContainer(model_dir, code_dir, self._env(container), shipper, container.get("Image", ""))
                )
            for model_server in containers:
                model_server.wait_ready()
            with ThreadPoolExecutor(max_workers=count) as pool:
                list(
                    pool.map(
                        lambda i: self._transform(s3, containers[i], source["S3Uri"], keys[i::count]), range(count)
                    )
                )
        finally:
            for model_server in containers:
                model_server.stop()
            for shipper in shippers:
                shipper.close()

    def _env(self, container: dict) -> dict[str, str]:
        job = self.job
        env = job_env.for_job(self.region, **{**(container.get("Environment") or {}), **(job.environment or {})})
        env.update({"SAGEMAKER_BATCH": "true", "SAGEMAKER_REGION": self.region})
        if job.max_payload_in_mb is not None:
            env["SAGEMAKER_MAX_PAYLOAD_IN_MB"] = str(job.max_payload_in_mb)
        if job.batch_strategy:
            env["SAGEMAKER_BATCH_STRATEGY"] = "MULTI_RECORD" if job.batch_strategy == "MultiRecord" else "SINGLE_RECORD"
        if job.max_concurrent_transforms:
            env["SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"] = str(job.max_concurrent_transforms)
        return env

    @staticmethod
    def _join(records, answers, join, out_filter, content_type, accept) -> list[bytes]:
        """One output per input record, joined with it and filtered."""
        outputs = [line for answer in answers for line in answer.split(b"\n") if line.strip()]
        if len(outputs) != len(records):
            raise TransformFailed(
                f"ClientError: the model returned {len(outputs)} outputs for {len(records)} records; "
                "JoinSource and OutputFilter need one output line per record"
            )
        try:
            return [join_and_filter(r, o, join, out_filter, content_type, accept) for r, o in zip(records, outputs)]
        except (FilterError, ValueError, IndexError) as error:
            raise TransformFailed(f"ClientError: OutputFilter {out_filter}: {error}") from None

    def _transform(self, s3, model_server: ModelContainer, prefix: str, keys: list[str]) -> None:
        job = self.job
        params = model_server.execution_parameters()
        strategy = job.batch_strategy or {"MULTI_RECORD": "MultiRecord", "SINGLE_RECORD": "SingleRecord"}.get(
            params.get("BatchStrategy", ""), "MultiRecord"
        )
        payload = job.max_payload_in_mb if job.max_payload_in_mb is not None else params.get("MaxPayloadInMB", 6)
        concurrency = job.max_concurrent_transforms or params.get("MaxConcurrentTransforms", 1)
        split_type = job.transform_input.get("SplitType", "None")
        content_type, accept = job.transform_input.get("ContentType"), (job.transform_output or {}).get("Accept")
        assemble = (job.transform_output or {}).get("AssembleWith", "None")
        in_bucket, in_prefix = s3io.split_s3_uri(prefix)
        out_bucket, out_prefix = s3io.split_s3_uri(job.transform_output["S3OutputPath"].rstrip("/") + "/")
        processing = job.data_processing or {}
        in_filter, out_filter = processing.get("InputFilter"), processing.get("OutputFilter")
        join = processing.get("JoinSource", "None")
        per_record = bool(join == "Input" or (out_filter and out_filter != "$"))
        for key in keys:
            if self._stop.is_set():
                return
            body = s3.get_object(Bucket=in_bucket, Key=key)["Body"].read()
            records = split_records(body, split_type)
            try:
                sent = [filter_input(r, in_filter, content_type) for r in records]
            except (FilterError, ValueError, IndexError) as error:
                raise TransformFailed(f"ClientError: InputFilter {in_filter}: {error}") from None
            requests = batches(sent, strategy, int(payload), split_type)
            with ThreadPoolExecutor(max_workers=max(1, int(concurrency))) as pool:
                answers = list(pool.map(lambda b: model_server.invoke(b, content_type, accept), requests))
            if per_record:
                answers = self._join(records, answers, join, out_filter, content_type, accept)
            joiner = b"\n" if assemble == "Line" else b""
            output = b"".join(a + joiner for a in answers) if assemble == "Line" else b"".join(answers)
            relative = key[len(in_prefix) :].lstrip("/") if key != in_prefix else Path(key).name
            s3.put_object(Bucket=out_bucket, Key=f"{out_prefix}{relative}.out", Body=output)
