"""EMR Serverless Spark job runs that really run: `sparkSubmit` on Apache Spark in local mode.

An application is CREATED when made (moto said STARTED at once: the provider's create operator waits for
CREATED) and starts with its first job run. StartJobRun is idempotent on clientToken, as the API documents;
a run goes SUBMITTED -> SCHEDULED -> RUNNING -> SUCCESS or FAILED (stateDetails: the driver's exception and
the last stderr lines), CancelJobRun moves it to CANCELLING, then CANCELLED once its process has ended.
executionTimeoutMinutes (default 720) ends it FAILED. The entry point is a Python script on S3 (a JAR entry
point is refused: no `--class` runs here); sparkSubmitParameters take `--conf k=v`, `--py-files`,
`--driver-memory`, `--executor-memory`, `--executor-cores` and `--num-executors`, as spark-submit does. The
driver's stdout and stderr go where monitoringConfiguration sends them: gzipped to S3 under
`<logUri>/applications/<app>/jobs/<run>/SPARK_DRIVER/`, and to CloudWatch Logs when enabled
(https://docs.aws.amazon.com/emr/latest/EMR-Serverless-UserGuide/logging.html).
"""

from __future__ import annotations

import gzip
import logging
import os
import shlex
import threading

import psutil
from moto.core.utils import utcnow
from moto.emrserverless import models as emr_models

from mlscale_emulator import settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.spark import runtime
from mlscale_emulator.spark.script_run import failure_message, run_to_end
from mlscale_emulator.state import INTERRUPTED, backends_of
from mlscale_emulator.transitions import EMR_SERVERLESS_JOB_RUN, check

log = logging.getLogger(__name__)
ENDED = ("SUCCESS", "FAILED", "CANCELLED")
# spark-submit's resource options, as the properties they set
OPTION_PROPERTIES = {
    "--driver-memory": "spark.driver.memory",
    "--executor-memory": "spark.executor.memory",
    "--executor-cores": "spark.executor.cores",
    "--num-executors": "spark.executor.instances",
}
DEFAULT_EXECUTOR_MEMORY_MB = 14 * 1024  # EMR Serverless's default spark.executor.memory (14g)
_cancels: dict[str, threading.Event] = {}


def submit_parameters(text: str | None) -> tuple[dict[str, str], list[str]]:
    """`sparkSubmitParameters` as Spark properties and --py-files URIs; anything else is refused."""
    conf: dict[str, str] = {}
    py_files: list[str] = []
    tokens = shlex.split(text or "")
    while tokens:
        option = tokens.pop(0)
        if not tokens:
            raise ValueError(f"sparkSubmitParameters: {option} needs a value")
        value = tokens.pop(0)
        if option == "--conf":
            key, sep, val = value.partition("=")
            if not sep or not key:
                raise ValueError(f"sparkSubmitParameters: --conf {value!r} is not key=value")
            conf[key] = val
        elif option == "--py-files":
            py_files += [uri for uri in value.split(",") if uri]
        elif option in OPTION_PROPERTIES:
            conf[OPTION_PROPERTIES[option]] = value
        else:
            raise ValueError(f"sparkSubmitParameters: {option} is not supported here (use --conf)")
    return conf, py_files


def local_resources(conf: dict[str, str]) -> tuple[int, int]:
    """Task slots (the executors' cores, at most this machine's) and heap (the executor memory asked for,
    else EMR Serverless's default capped at a quarter of this machine's memory)."""
    cores = int(conf.get("spark.executor.cores", 4)) * int(conf.get("spark.executor.instances", 3))
    cores = max(1, min(os.cpu_count() or 1, cores))
    for key in ("spark.executor.memory", "spark.driver.memory"):
        if key in conf:
            return cores, runtime.parse_memory_mb(conf[key])
    return cores, min(DEFAULT_EXECUTOR_MEMORY_MB, psutil.virtual_memory().total // (4 << 20))


def _move(run, state: str, details: str | None = None) -> None:
    check(EMR_SERVERLESS_JOB_RUN, f"job run {run.id}", run.state, state)
    run.state, run.updated_at = state, utcnow()
    if details is not None:
        run.state_details = details
    if state in ENDED:
        run.ended_at = run.updated_at
        run.total_execution_duration_seconds = int((run.ended_at - run.started_at).total_seconds())
        _cancels.pop(run.id, None)
        log.info("emr serverless job run %s: %s %s", run.id, state, details or "")


def _start_job_run(self, **kwargs):
    token = kwargs.get("client_token")
    for run in self.job_runs.get(kwargs["application_id"], []):
        if token and run.client_token == token:
            return run  # the same request again: the run it started
    run = _moto_start(self, **kwargs)
    application = self.applications[run.application_id]
    if application.state in ("CREATED", "STOPPED"):  # autoStartConfiguration: the first job run starts it
        application.state = "STARTED"
    run.state, run.state_details, run.started_at = "SUBMITTED", "", utcnow()
    run.created_at = run.updated_at = run.started_at
    _cancels[run.id] = threading.Event()
    threading.Thread(target=_execute, args=(self.region_name, run), name=f"emrs-{run.id}", daemon=True).start()
    return run


def _cancel_job_run(self, application_id: str, job_run_id: str):
    run = self.get_job_run(application_id, job_run_id)
    if run.state in ENDED:
        raise emr_models.ValidationException(f"Job run {job_run_id} is {run.state} and cannot be cancelled")
    if run.state != "CANCELLING":
        _move(run, "CANCELLING")
    _cancels.setdefault(run.id, threading.Event()).set()
    return application_id, job_run_id


def _log_targets(region: str, run) -> tuple[list, str | None]:
    """CloudWatch shippers for stdout and stderr where enabled, and the S3 log prefix where one is set."""
    monitoring = (run.configuration_overrides or {}).get("monitoringConfiguration") or {}
    prefix = f"applications/{run.application_id}/jobs/{run.id}/SPARK_DRIVER"
    cloudwatch = monitoring.get("cloudWatchLoggingConfiguration") or {}
    shippers = []
    if cloudwatch.get("enabled"):
        logs = settings.aws_client("logs", region)
        group = cloudwatch.get("logGroupName") or "/aws/emr-serverless"
        stream = f"{cloudwatch.get('logStreamNamePrefix', '').strip('/')}/{prefix}".lstrip("/")
        shippers = [LogShipper(logs, group, f"{stream}/{name}") for name in ("stdout", "stderr")]
    log_uri = (monitoring.get("s3MonitoringConfiguration") or {}).get("logUri")
    return shippers, f"{log_uri.rstrip('/')}/{prefix}" if log_uri else None


def _execute(region: str, run) -> None:
    cancel = _cancels.get(run.id) or threading.Event()
    try:
        _move(run, "SCHEDULED")
        submit = (run.job_driver or {}).get("sparkSubmit")
        if not submit:
            return _move(run, "FAILED", "jobDriver: only sparkSubmit job runs are emulated (not Hive)")
        entry = submit["entryPoint"]
        if not entry.endswith(".py"):
            return _move(run, "FAILED", f"entryPoint {entry}: the emulator runs Python entry points only")
        conf, py_uris = submit_parameters(submit.get("sparkSubmitParameters"))
        work = settings.current().jobs_dir / "emr-serverless" / run.id
        work.mkdir(parents=True, exist_ok=True)
        s3 = settings.aws_client("s3", region)
        script = s3io.inside(work, os.path.basename(s3io.split_s3_uri(entry)[1]))  # a key of ".." stays out
        s3io.download(s3, *s3io.split_s3_uri(entry), script)
        py_files = runtime.download_py_files(s3, py_uris, work / "py-files")
        cores, heap = local_resources(conf)
        properties = runtime.properties(
            cores=cores,
            memory_mb=heap,
            work=work,
            jar=runtime.file_system_jar(settings.current().home / "spark"),
            region=region,
            endpoint_url=settings.current().endpoint_url,
        )
        command = runtime.submit_command(
            script,
            [str(a) for a in submit.get("entryPointArguments") or []],
            work=work,
            settings=properties,
            conf=conf,
            py_files=py_files,
        )
        shippers, s3_logs = _log_targets(region, run)
        files = {name: open(work / name, "w") for name in ("stdout", "stderr")}  # noqa: SIM115 - closed below

        def writer(name: str, index: int):
            def write(line: str) -> None:
                files[name].write(line)
                if shippers:
                    shippers[index].write(line)

            return write

        if run.state == "SCHEDULED":
            _move(run, "RUNNING")
        outcome = run_to_end(
            command,
            cwd=work,
            env=runtime.environment(region, work),
            on_line=writer("stdout", 0),
            on_error_line=writer("stderr", 1),
            timeout_s=60 * int(run.execution_timeout_minutes or 720),
            stop=cancel,
        )
        for handle in files.values():
            handle.close()
        for shipper in shippers:
            shipper.close()
        if s3_logs:
            for name in files:
                s3io.upload_file(s3, _gzip(work / name), f"{s3_logs}/{name}.gz")
        if run.state == "CANCELLING":
            return _move(run, "CANCELLED", "Job run was cancelled")
        if outcome.ending == "stopped":  # the emulator is stopping (stop_all), not CancelJobRun
            return _move(run, "FAILED", INTERRUPTED)
        if outcome.ending == "timed out":
            minutes = run.execution_timeout_minutes
            return _move(run, "FAILED", f"Job run timed out after {minutes} minutes (executionTimeoutMinutes)")
        if outcome.returncode != 0:
            return _move(run, "FAILED", failure_message(outcome))
        _move(run, "SUCCESS", "")
    except Exception as error:  # a bad parameter or an emulator fault still ends the run, with the reason
        log.exception("emr serverless job run %s failed to run", run.id)
        if run.state not in ENDED:
            _move(run, "FAILED", f"{type(error).__name__}: {error}")


def _gzip(path):
    packed = path.with_name(path.name + ".gz")
    with open(path, "rb") as source, gzip.open(packed, "wb") as target:
        target.writelines(source)
    return packed


def _created_application(self, *args, **kwargs) -> None:
    _moto_application_init(self, *args, **kwargs)
    self.state = "CREATED"  # CreateApplication leaves it CREATED; StartApplication or a job run starts it


def stop_all() -> None:
    for cancel in list(_cancels.values()):
        cancel.set()


def recover() -> None:
    """After a restore: a job run that ran when the emulator stopped ends FAILED."""
    for backend in backends_of(emr_models.emrserverless_backends):
        for runs in backend.job_runs.values():
            for run in runs:
                if run.state not in ENDED:
                    run.state, run.state_details = "FAILED", INTERRUPTED


_moto_start = emr_models.EMRServerlessBackend.start_job_run
_moto_application_init = emr_models.Application.__init__


def install() -> None:
    emr_models.EMRServerlessBackend.start_job_run = _start_job_run
    emr_models.EMRServerlessBackend.cancel_job_run = _cancel_job_run
    emr_models.Application.__init__ = _created_application
