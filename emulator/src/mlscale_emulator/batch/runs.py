"""Runs an AWS Batch job for real: one process tree per node, through Batch's job states.

SUBMITTED -> PENDING (dependencies) -> RUNNABLE (until a compute environment has the vCPUs) -> STARTING ->
RUNNING -> SUCCEEDED or FAILED. The main node starts first, the children once it runs; the job ends when
the main node exits, its exit code decides the status, and the children are stopped; a child that dies is
left alone, as AWS does (https://docs.aws.amazon.com/batch/latest/userguide/job-lifecycle.html). The
container's command runs with the emulator's Python (the image is not pulled), with Batch's environment
variables, and its output goes to CloudWatch Logs `/aws/batch/job`. `attemptDurationSeconds` applies to the
whole job; a failed main node starts another attempt while `retryStrategy` allows it.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import sys
import threading
import time
import uuid
from datetime import datetime
from typing import Any

from mlscale_emulator import job_env, settings
from mlscale_emulator.batch import capacity, events
from mlscale_emulator.batch import nodes as node_model
from mlscale_emulator.executors.log_shipper import LogShipper
from mlscale_emulator.executors.processes import (
    SHUTDOWN_GRACE_SECONDS,
    drain_output,
    free_port,
    launch,
    settle,
    stop_process_group,
    wait_briefly,
)
from mlscale_emulator.transitions import BATCH_JOB, check

log = logging.getLogger(__name__)
LOG_GROUP = "/aws/batch/job"
STOP_GRACE_SECONDS = 30  # ECS's default stopTimeout: SIGTERM, then SIGKILL
TIMEOUT_REASON = "Job attempt duration exceeded timeout"
ESSENTIAL_EXITED = "Essential container in task exited"
_runs: dict[str, BatchRun] = {}


def now_ms() -> int:
    return int(time.time() * 1000)


class BatchRun:
    """Drives one job's attempts in a thread; TerminateJob and CancelJob reach it through `terminate`."""

    def __init__(self, job: Any, region: str):
        self.job, self.region = job, region
        self.stop = threading.Event()
        self.stop_reason: str | None = None
        self.thread = threading.Thread(target=self._run, name=f"batch-{job.job_id[:8]}", daemon=True)

    def start(self) -> None:
        _runs[self.job.job_id] = self
        self.thread.start()

    def terminate(self, reason: str, running_too: bool) -> None:
        """TerminateJob (running_too) or CancelJob (only before STARTING; a no-op after, as on AWS)."""
        if running_too or self.job.status in ("SUBMITTED", "PENDING", "RUNNABLE"):
            self.stop_reason = reason
            self.stop.set()

    # -- status -----------------------------------------------------------------------------------------

    def _set(self, status: str, reason: str | None = None) -> None:
        job = self.job
        check(BATCH_JOB, f"batch job {job.job_id}", job.status, status)
        if reason is not None:
            job.job_stopped_reason = reason
        if status in ("SUCCEEDED", "FAILED"):
            job.job_stopped, job.job_stopped_at = True, datetime.now()
        job.status = status
        log.info("batch job %s (%s): %s %s", job.job_name, job.job_id, status, reason or "")
        events.job_state_change(job, self.region)

    # -- the job ----------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._execute()
        except Exception as error:  # an emulator bug still ends the job, with the reason
            log.exception("batch job %s crashed", self.job.job_id)
            if self.job.status not in ("SUCCEEDED", "FAILED"):
                self._set("FAILED", f"InternalError: {error!r}")
        finally:
            _runs.pop(self.job.job_id, None)

    def _execute(self) -> None:
        job = self.job
        self._set("PENDING")
        if not self._dependencies_done():
            return
        props = job.mlscale_nodes
        need = sum(node_model.vcpus(c) for c in props["containers"])
        attempts = int((job.retry_strategy or {}).get("attempts") or 1)
        for attempt in range(1, attempts + 1):
            self._set("RUNNABLE")
            multinode = job.job_definition.type == "multinode"
            if multinode and not any(capacity.can_run_multinode(e) for e in capacity.environments_of(job.job_queue)):
                job.job_stopped_reason = (
                    "MISCONFIGURATION: multi-node parallel jobs need a managed On-Demand EC2 "
                    "compute environment; the queue has only SPOT, Fargate or UNMANAGED ones"
                )
            environment = capacity.acquire(job.job_queue, need, self.stop, multinode=multinode)
            if environment is None:
                return self._set("FAILED", self.stop_reason)
            try:
                outcome = self._attempt(attempt, environment)
            finally:
                capacity.release(environment, need)
            if outcome["succeeded"]:
                return self._set("SUCCEEDED", ESSENTIAL_EXITED)
            if self.stop.is_set() or attempt == attempts or not _retries(job.retry_strategy, outcome):
                return self._set("FAILED", outcome["reason"])
            log.info("batch job %s: attempt %d failed (%s); retrying", job.job_id, attempt, outcome["reason"])

    def _dependencies_done(self) -> bool:
        ids = [d["jobId"] for d in self.job.depends_on or []]
        while ids:
            statuses = [getattr(self.job.all_jobs.get(i), "status", None) for i in ids]
            if "FAILED" in statuses:
                self._set("FAILED", "Dependent Job failed")
                return False
            if all(s == "SUCCEEDED" for s in statuses):
                break
            if self.stop.wait(0.5):
                self._set("FAILED", self.stop_reason)
                return False
        return True

    def _attempt(self, attempt: int, environment: Any) -> dict[str, Any]:
        job = self.job
        props = job.mlscale_nodes
        main = props["mainNode"]
        records = [_node_record(job, index, index == main) for index in range(props["numNodes"])]
        job.mlscale_node_records = records
        work = settings.current().jobs_dir / "batch" / job.job_id / f"attempt-{attempt}"
        logs = settings.aws_client("logs", self.region)
        processes, shippers = {}, []
        # The nodes share this host: one free port per attempt for their rendezvous (torch's MASTER_PORT), as
        # each node on AWS has its own address and can use the default
        self.master_port = free_port()
        self._set("STARTING")
        job.job_started_at = datetime.now()
        attempt_record = {"startedAt": now_ms(), "container": {}}
        job.attempts.append(attempt_record)
        try:
            # the main node first; the children once it runs
            for index in [main, *[i for i in range(props["numNodes"]) if i != main]]:
                record = records[index]
                container = props["containers"][index]
                shipper = LogShipper(logs, LOG_GROUP, record["logStreamName"])
                shippers.append(shipper)
                cwd = work / f"node-{index}"
                cwd.mkdir(parents=True, exist_ok=True)
                try:
                    command = _command(job, container)
                    process, _tail = launch(
                        command,
                        cwd=cwd,
                        env=self._environment(attempt, index, environment, container),
                        on_line=shipper.write,
                    )
                except (ValueError, OSError) as error:  # no command, or one that cannot start
                    record.update(status="FAILED", reason=f"CannotStartContainerError: {error}", stoppedAt=now_ms())
                    outcome = {
                        "succeeded": False,
                        "exit_code": None,
                        "reason": f"CannotStartContainerError: {error}",
                        "node_reason": str(error),
                    }
                    break
                processes[index] = process
                record.update(status="RUNNING", startedAt=now_ms())
                if index == main:
                    self._set("RUNNING")
            else:
                outcome = self._wait(processes, records, main)
        finally:
            for process in processes.values():
                stop_process_group(process, STOP_GRACE_SECONDS)
                drain_output(process)
            for index, process in processes.items():
                record = records[index]
                if record["status"] == "RUNNING":
                    code = process.poll()
                    record.update(status="SUCCEEDED" if code == 0 else "FAILED", exitCode=code, stoppedAt=now_ms())
            for shipper in shippers:
                shipper.close()
        main_record = records[main]
        attempt_record.update(
            stoppedAt=now_ms(),
            statusReason=outcome["reason"],
            container={
                "exitCode": main_record.get("exitCode"),
                "logStreamName": main_record["logStreamName"],
                "taskArn": main_record["taskArn"],
                "reason": outcome.get("node_reason"),
            },
        )
        job.exit_code = main_record.get("exitCode")
        job.log_stream_name = main_record["logStreamName"]
        return outcome

    def _wait(self, processes: dict[int, Any], records: list[dict], main: int) -> dict[str, Any]:
        duration = self.job._get_attempt_duration()  # SubmitJob's timeout, else the job definition's
        deadline = time.monotonic() + int(duration) if duration else None
        while True:
            for index, process in processes.items():
                code = process.poll()
                if code is not None and records[index]["status"] == "RUNNING":
                    records[index].update(
                        status="SUCCEEDED" if code == 0 else "FAILED", exitCode=code, stoppedAt=now_ms()
                    )
            main_code = records[main].get("exitCode")
            if records[main]["status"] != "RUNNING":
                settle(processes.values(), 0.3)  # nodes ending with the main one record their own exit
                return {
                    "succeeded": main_code == 0,
                    "exit_code": main_code,
                    "reason": ESSENTIAL_EXITED,
                    "node_reason": None if main_code == 0 else f"exit code {main_code}",
                }
            if self.stop.is_set():
                return {"succeeded": False, "exit_code": None, "reason": self.stop_reason, "node_reason": None}
            if deadline is not None and time.monotonic() > deadline:
                return {"succeeded": False, "exit_code": None, "reason": TIMEOUT_REASON, "node_reason": None}
            wait_briefly([processes[main]])  # the job ends with its main node

    def _environment(self, attempt: int, index: int, environment: Any, container: dict) -> dict[str, str]:
        job, props = self.job, self.job.mlscale_nodes
        env = job_env.base()
        env.update(node_model.environment(container))
        env.setdefault("MASTER_PORT", str(self.master_port))
        multinode = job.job_definition.type == "multinode"
        env.update(
            {
                "AWS_BATCH_JOB_ID": f"{job.job_id}#{index}" if multinode else job.job_id,
                "AWS_BATCH_JOB_ATTEMPT": str(attempt),
                "AWS_BATCH_JQ_NAME": job.job_queue.name,
                "AWS_BATCH_CE_NAME": environment.name,
            }
        )
        if multinode:
            env.update(
                {
                    "AWS_BATCH_JOB_NODE_INDEX": str(index),
                    "AWS_BATCH_JOB_NUM_NODES": str(props["numNodes"]),
                    "AWS_BATCH_JOB_MAIN_NODE_INDEX": str(props["mainNode"]),
                }
            )
            if index != props["mainNode"]:  # child nodes only; every node here is this machine
                env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "127.0.0.1"
        # The container's own AWS calls reach the emulator, as its job role's would reach AWS.
        env.update({**job_env.emulator_access(self.region), **job_env.LOOPBACK, "PYTHONUNBUFFERED": "1"})
        env["PYTHONPATH"] = job_env.python_path(*filter(None, [env.get("PYTHONPATH")]))  # the container's after
        # Emulated nodes share this machine's cores; do not let each one take them all.
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // props["numNodes"])))
        return env


def _node_record(job: Any, index: int, is_main: bool) -> dict[str, Any]:
    task_id = uuid.uuid4().hex
    return {
        "nodeIndex": index,
        "isMainNode": is_main,
        "status": "STARTING",
        "exitCode": None,
        "logStreamName": f"{job.job_definition.name}/default/{task_id}",
        "taskArn": f"arn:aws:ecs:{job.job_definition._region}:{job.backend.account_id}:task/{task_id}",
    }


def _command(job: Any, container: dict[str, Any]) -> list[str]:
    """The container's command, `Ref::name` parameters filled in, `python` being this Python."""
    command = [str(part) for part in container.get("command") or []]
    for name, value in (job.parameters or {}).items():
        command = [part.replace(f"Ref::{name}", str(value)) for part in command]
    if not command:
        raise ValueError("the container has no command (the emulator runs no image's own entry point)")
    if os.path.basename(command[0]) in ("python", "python3", f"python3.{sys.version_info.minor}"):
        command[0] = sys.executable
    return command


def _retries(strategy: dict[str, Any] | None, outcome: dict[str, Any]) -> bool:
    """Another attempt? The first evaluateOnExit rule that matches decides; none matching retries (the API's rule)."""
    for rule in (strategy or {}).get("evaluateOnExit") or []:
        checks = [
            (rule.get("onExitCode"), "" if outcome["exit_code"] is None else str(outcome["exit_code"])),
            (rule.get("onStatusReason"), outcome["reason"] or ""),
            (rule.get("onReason"), outcome.get("node_reason") or ""),
        ]
        if all(pattern is None or fnmatch.fnmatchcase(value, pattern) for pattern, value in checks):
            return rule["action"].upper() == "RETRY"
    return True


def run_of(job_id: str) -> BatchRun | None:
    return _runs.get(job_id)


def stop_all() -> None:
    for run in list(_runs.values()):
        run.terminate("The mlscale emulator stopped", running_too=True)
    for run in list(_runs.values()):  # its processes get SHUTDOWN_GRACE_SECONDS before SIGKILL
        run.thread.join(timeout=SHUTDOWN_GRACE_SECONDS + 2)
    capacity.reset()
