"""Glue Python-shell job runs that really run: RUNNING -> SUCCEEDED/FAILED/TIMEOUT, logs in CloudWatch.

The script comes from the job's Command.ScriptLocation and gets the run's
arguments (DefaultArguments, then the run's own) as `--key value` pairs, as
Glue passes them. Spark (glueetl) jobs are refused with a reason: there is no
Spark here. The `awsglue` library is not installed; parse sys.argv instead.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from moto.core.utils import utcnow  # moto's naive UTC, as its own timestamps are
from moto.glue import models as glue_models

from mlscale_emulator import job_env, settings
from mlscale_emulator.executors import s3io
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.executors.processes import launch, stop_process_group
from mlscale_emulator.state import INTERRUPTED, backends_of
from mlscale_emulator.transitions import GLUE_JOB_RUN, check

log = logging.getLogger(__name__)
OUTPUT_GROUP, ERROR_GROUP = "/aws-glue/python-jobs/output", "/aws-glue/python-jobs/error"


def _start_job_run(self, **kwargs) -> str:
    run_id = _moto_start(self, **kwargs)
    run = next(r for r in self.job_runs if r.job_run_id == run_id)
    run._transitions = []  # the executor moves the state, not moto's state manager
    run.status, run.error_message, run.completed_on = "RUNNING", None, None
    threading.Thread(target=_execute, args=(self, run), name=f"glue-{run_id[:12]}", daemon=True).start()
    return run_id


def _as_dict(self) -> dict:
    data = _moto_as_dict(self)
    data["LogGroupName"] = "/aws-glue/python-jobs"
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
    log.info("glue job run %s: %s %s", run.job_run_id, state, error or "")


def _execute(job, run) -> None:
    region = job.backend.region_name if hasattr(job, "backend") else "us-east-1"
    try:
        command = job.command or {}
        if command.get("Name") != "pythonshell":
            return _finish(
                run,
                "FAILED",
                f"the emulator runs Python shell jobs only; {command.get('Name')} (Spark) jobs are not emulated",
            )
        work = settings.current().jobs_dir / "glue" / run.job_run_id
        work.mkdir(parents=True, exist_ok=True)
        s3 = settings.aws_client("s3", region)
        script = work / os.path.basename(command["ScriptLocation"])
        bucket, key = s3io.split_s3_uri(command["ScriptLocation"])
        s3io.download(s3, bucket, key, script)
        args = [a for k, v in sorted((run.arguments or {}).items()) for a in (k, str(v))]
        env = job_env.for_job(region)
        logs = settings.aws_client("logs", region)
        out, err = LogShipper(logs, OUTPUT_GROUP, run.job_run_id), LogShipper(logs, ERROR_GROUP, run.job_run_id)
        process, tail = launch(
            [sys.executable, str(script), "--JOB_NAME", job.name, "--JOB_RUN_ID", run.job_run_id, *args],
            cwd=work,
            env=env,
            on_line=out.write,
            on_error_line=err.write,
        )
        deadline = time.monotonic() + 60 * int(run.timeout or 2880)  # Timeout is in minutes (default 48 h)
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        timed_out = process.poll() is None
        stop_process_group(process, 5)
        time.sleep(0.2)
        out.close()
        err.close()
        if timed_out:
            return _finish(run, "TIMEOUT", f"Job run timed out after {run.timeout} minutes")
        if process.returncode != 0:
            return _finish(run, "FAILED", ("\n".join(list(tail)[-5:]) or f"exit code {process.returncode}")[-1000:])
        _finish(run, "SUCCEEDED")
    except Exception as error:  # an emulator fault still ends the run, with the reason
        log.exception("glue job run crashed")
        _finish(run, "FAILED", f"InternalServiceException: {error!r}")


def recover() -> None:
    """After a restore: a job run that ran when the emulator stopped ends FAILED."""
    for backend in backends_of(glue_models.glue_backends):
        for job in backend.jobs.values():
            for run in job.job_runs:
                if run.status == "RUNNING":
                    _finish(run, "FAILED", INTERRUPTED)


_moto_start = glue_models.FakeJob.start_job_run
_moto_as_dict = glue_models.FakeJobRun.as_dict


def install() -> None:
    glue_models.FakeJob.start_job_run = _start_job_run
    glue_models.FakeJobRun.as_dict = _as_dict
