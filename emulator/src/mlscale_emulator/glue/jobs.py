"""Glue job runs that really run: Python shell jobs on this interpreter, Spark (glueetl) jobs on Apache Spark.

RUNNING -> SUCCEEDED / FAILED / TIMEOUT, or STOPPING -> STOPPED on BatchStopJobRun; the output goes to
CloudWatch Logs where Glue writes it (/aws-glue/python-jobs/... for Python shell, /aws-glue/jobs/output and
/aws-glue/jobs/error for Spark, one stream per run id). The script comes from Command.ScriptLocation and
gets the run's arguments (DefaultArguments, the run's own, NonOverridableArguments) as `--key value` pairs
with --JOB_NAME and --JOB_RUN_ID, as Glue passes them. A Spark job's `--conf` argument sets Spark
properties and `--extra-py-files` adds Python files (Glue's special parameters:
https://docs.aws.amazon.com/glue/latest/dg/aws-glue-programming-etl-glue-arguments.html); WorkerType and
NumberOfWorkers become local task slots and JVM heap (mlscale_emulator.glue.workers). Scripts that import
`awsglue` (GlueContext, DynamicFrame) need AWS Glue's ETL library, a Java library not published outside
AWS's own Maven repository: they fail with Python's ImportError; plain PySpark scripts run as they are.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading

from moto.core.utils import utcnow  # moto's naive UTC, as its own timestamps are
from moto.glue import models as glue_models
from moto.glue import responses as glue_responses
from moto.glue.exceptions import EntityNotFoundException

from mlscale_emulator import job_env, settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.glue import workers
from mlscale_emulator.spark import runtime
from mlscale_emulator.spark.script_run import failure_message, run_to_end
from mlscale_emulator.state import INTERRUPTED, backends_of
from mlscale_emulator.transitions import GLUE_JOB_RUN, check

log = logging.getLogger(__name__)
LOG_GROUPS = {"pythonshell": "/aws-glue/python-jobs", "glueetl": "/aws-glue/jobs"}
SPARK_ONLY_ARGUMENTS = ("--conf", "--extra-py-files")
_stops: dict[str, threading.Event] = {}  # job run id -> set by BatchStopJobRun or the emulator's shutdown


def _start_job_run(self, **kwargs) -> str:
    run_id = _moto_start(self, **kwargs)
    run = next(r for r in self.job_runs if r.job_run_id == run_id)
    run._transitions = []  # the executor moves the state, not moto's state manager
    run.status, run.error_message, run.completed_on = "RUNNING", None, None
    run.log_group = LOG_GROUPS.get((self.command or {}).get("Name"), LOG_GROUPS["glueetl"])
    _stops[run_id] = threading.Event()
    threading.Thread(target=_execute, args=(self, run), name=f"glue-{run_id[:12]}", daemon=True).start()
    return run_id


def _as_dict(self) -> dict:
    data = _moto_as_dict(self)
    data["LogGroupName"] = getattr(self, "log_group", LOG_GROUPS["glueetl"])
    data["ExecutionTime"] = int(((self.completed_on or utcnow()) - self.started_on).total_seconds())
    if self.completed_on:
        data["CompletedOn"] = self.completed_on
    else:
        data.pop("CompletedOn", None)
    if getattr(self, "error_message", None):
        data["ErrorMessage"] = self.error_message
    return data


def _finish(run, state: str, error: str | None = None) -> None:
    check(GLUE_JOB_RUN, f"job run {run.job_run_id}", run.status, state)
    run.completed_on = run.modified_on = utcnow()
    run.error_message = error
    run.status = state
    _stops.pop(run.job_run_id, None)
    log.info("glue job run %s: %s %s", run.job_run_id, state, error or "")


def _command(job, run, work, script, region) -> tuple[list[str], dict[str, str]]:
    """The process a run starts, and its environment."""
    kind = (job.command or {}).get("Name")
    arguments = dict(run.arguments or {})
    glue_args = ["--JOB_NAME", job.name, "--JOB_RUN_ID", run.job_run_id]
    if kind == "pythonshell":
        args = [a for k, v in sorted(arguments.items()) for a in (k, str(v))]
        return [sys.executable, str(script), *glue_args, *args], job_env.for_job(region)
    s3 = settings.aws_client("s3", region)
    py_files = runtime.download_py_files(s3, (arguments.get("--extra-py-files") or "").split(","), work / "py-files")
    slots = workers.local_slots(run.worker_type, run.number_of_workers)
    conf = runtime.parse_conf(arguments["--conf"]) if arguments.get("--conf") else {}
    properties = runtime.properties(
        cores=slots.cores,
        memory_mb=workers.heap_mb(slots, conf),
        work=work,
        jar=runtime.file_system_jar(settings.current().home / "spark"),
        region=region,
        endpoint_url=settings.current().endpoint_url,
    )
    args = [a for k, v in sorted(arguments.items()) if k not in SPARK_ONLY_ARGUMENTS for a in (k, str(v))]
    command = runtime.submit_command(
        script, [*glue_args, *args], work=work, settings=properties, conf=conf, py_files=py_files
    )
    return command, runtime.environment(region, work)


def _execute(job, run) -> None:
    region = job.backend.region_name if hasattr(job, "backend") else "us-east-1"
    stop = _stops.get(run.job_run_id) or threading.Event()
    try:
        command = job.command or {}
        if command.get("Name") not in LOG_GROUPS:
            return _finish(run, "FAILED", f"the emulator runs pythonshell and glueetl jobs, not {command.get('Name')}")
        work = settings.current().jobs_dir / "glue" / run.job_run_id
        work.mkdir(parents=True, exist_ok=True)
        script = s3io.inside(work, os.path.basename(command["ScriptLocation"]))  # a key of ".." stays out
        bucket, key = s3io.split_s3_uri(command["ScriptLocation"])
        s3io.download(settings.aws_client("s3", region), bucket, key, script)
        process_command, env = _command(job, run, work, script, region)
        logs = settings.aws_client("logs", region)
        out = LogShipper(logs, f"{run.log_group}/output", run.job_run_id)
        err = LogShipper(logs, f"{run.log_group}/error", run.job_run_id)
        outcome = run_to_end(
            process_command,
            cwd=work,
            env=env,
            on_line=out.write,
            on_error_line=err.write,
            timeout_s=60 * int(run.timeout or 2880),  # Timeout is in minutes (default 48 h)
            stop=stop,
        )
        out.close()
        err.close()
        if run.status == "STOPPING":
            return _finish(run, "STOPPED")
        if outcome.ending == "stopped":  # the emulator is stopping (stop_all), not BatchStopJobRun
            return _finish(run, "FAILED", INTERRUPTED)
        if outcome.ending == "timed out":
            return _finish(run, "TIMEOUT", f"Job run timed out after {run.timeout} minutes")
        if outcome.returncode != 0:
            return _finish(run, "FAILED", failure_message(outcome))
        _finish(run, "SUCCEEDED")
    except Exception as error:  # an emulator fault still ends the run, with the reason
        log.exception("glue job run crashed")
        if run.status in ("RUNNING", "STOPPING"):
            _finish(run, "FAILED", f"{type(error).__name__}: {error}")


def batch_stop_job_run(backend, job_name: str, run_ids: list[str]) -> dict:
    """BatchStopJobRun: each running run goes STOPPING, then STOPPED once its process has ended."""
    stopped, errors = [], []
    for run_id in run_ids:
        try:
            run = backend.get_job(job_name).get_job_run(run_id)
        except EntityNotFoundException as error:  # no such job, or no such run of it
            detail = {"ErrorCode": "EntityNotFoundException", "ErrorMessage": error.message}
            errors.append({"JobName": job_name, "JobRunId": run_id, "ErrorDetail": detail})
            continue
        if run.status not in ("STARTING", "RUNNING"):
            message = f"Job run {run_id} is {run.status}: only a running job run can be stopped"
            detail = {"ErrorCode": "InvalidInputException", "ErrorMessage": message}
            errors.append({"JobName": job_name, "JobRunId": run_id, "ErrorDetail": detail})
            continue
        check(GLUE_JOB_RUN, f"job run {run_id}", run.status, "STOPPING")
        run.status, run.modified_on = "STOPPING", utcnow()
        _stops.setdefault(run_id, threading.Event()).set()
        stopped.append({"JobName": job_name, "JobRunId": run_id})
    return {"SuccessfulSubmissions": stopped, "Errors": errors}


def _response_batch_stop_job_run(self) -> str:
    backend = glue_models.glue_backends[self.current_account][self.region]
    return json.dumps(batch_stop_job_run(backend, self.parameters.get("JobName"), self.parameters.get("JobRunIds")))


# UpdateJob's JobUpdate members -> FakeJob's attributes; the update replaces the whole definition
# (https://docs.aws.amazon.com/glue/latest/webapi/API_UpdateJob.html): what it leaves out goes back to unset
JOB_FIELDS = {
    "Description": "description",
    "LogUri": "log_uri",
    "Role": "role",
    "ExecutionProperty": "execution_property",
    "Command": "command",
    "DefaultArguments": "default_arguments",
    "NonOverridableArguments": "non_overridable_arguments",
    "Connections": "connections",
    "MaxRetries": "max_retries",
    "AllocatedCapacity": "allocated_capacity",
    "Timeout": "timeout",
    "MaxCapacity": "max_capacity",
    "WorkerType": "worker_type",
    "NumberOfWorkers": "number_of_workers",
    "SecurityConfiguration": "security_configuration",
    "NotificationProperty": "notification_property",
    "GlueVersion": "glue_version",
}


def _response_update_job(self) -> str:
    backend = glue_models.glue_backends[self.current_account][self.region]
    name, update = self.parameters.get("JobName"), self.parameters.get("JobUpdate") or {}
    job = backend.get_job(name)  # EntityNotFoundException for a job that does not exist
    for member, attribute in JOB_FIELDS.items():
        value = update.get(member)
        if member in ("ExecutionProperty", "DefaultArguments"):
            value = value or {}
        setattr(job, attribute, value)
    job.last_modified_on = utcnow()
    return json.dumps({"JobName": name})


def stop_all() -> None:
    """The emulator stops: every running job's process ends (its run is FAILED at the next start)."""
    for stop in list(_stops.values()):
        stop.set()


def recover() -> None:
    """After a restore: a job run that ran when the emulator stopped ends FAILED."""
    for backend in backends_of(glue_models.glue_backends):
        for job in backend.jobs.values():
            for run in job.job_runs:
                if run.status in ("RUNNING", "STOPPING"):
                    _finish(run, "FAILED", INTERRUPTED)


_moto_start = glue_models.FakeJob.start_job_run
_moto_as_dict = glue_models.FakeJobRun.as_dict


def install() -> None:
    glue_models.FakeJob.start_job_run = _start_job_run
    glue_models.FakeJobRun.as_dict = _as_dict
    glue_responses.GlueResponse.batch_stop_job_run = _response_batch_stop_job_run
    glue_responses.GlueResponse.update_job = _response_update_job
