"""AWS Batch patches: jobs run without Docker (mlscale_emulator.batch.runs), multi-node parallel included.

moto keeps compute environments, job queues and job definitions, but runs jobs in Docker, ignores
`nodeOverrides` and `retryStrategy` on SubmitJob, leaves `nodeProperties` out of DescribeJobDefinitions,
and knows no node jobs (`<job id>#<node index>`). Those are filled in here; moto's Docker runner is never
started. Array jobs are refused with a reason rather than run wrong.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from moto.batch import models as batch_models
from moto.batch import responses as batch_responses
from moto.batch.exceptions import ClientException

from mlscale_emulator.batch import nodes as node_model
from mlscale_emulator.batch import runs
from mlscale_emulator.state import INTERRUPTED, backends_of

JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")
MAX_NODES = 1000


def submit_job(backend: Any, params: dict[str, Any]) -> Any:
    name = params.get("jobName") or ""
    if not JOB_NAME.match(name):
        raise ClientException(
            "jobName must be 1-128 letters, numbers, hyphens and underscores, starting with a letter or number"
        )
    definition = backend.get_job_definition(params.get("jobDefinition") or "")
    if definition is None or definition.status != "ACTIVE":
        raise ClientException(f"Job definition {params.get('jobDefinition')} does not exist or is not ACTIVE")
    queue = backend.get_job_queue(params.get("jobQueue") or "")
    if queue is None:
        raise ClientException(f"Job queue {params.get('jobQueue')} does not exist")
    if params.get("arrayProperties"):
        raise ClientException("array jobs are not emulated by mlscale (submit one job per index)")
    try:
        if definition.type == "multinode":
            if params.get("containerOverrides"):
                raise node_model.NodeError("a multi-node job takes nodeOverrides, not containerOverrides")
            props = node_model.node_properties(definition, params.get("nodeOverrides"))
        else:
            if params.get("nodeOverrides"):
                raise node_model.NodeError("nodeOverrides are for multi-node parallel job definitions")
            props = node_model.single_node(definition.container_properties or {}, params.get("containerOverrides"))
    except node_model.NodeError as error:
        raise ClientException(str(error)) from None
    if not 1 <= props["numNodes"] <= MAX_NODES:
        raise ClientException(f"numNodes must be from 1 to {MAX_NODES}")
    strategy = params.get("retryStrategy") or definition.retry_strategy or {}
    if not 1 <= int(strategy.get("attempts") or 1) <= 10:
        raise ClientException("retryStrategy.attempts must be from 1 to 10")
    tags = dict(params.get("tags") or {})
    if params.get("propagateTags") or definition.propagate_tags:
        tags = {**definition.backend.tagger.get_tag_dict_for_resource(definition.arn), **tags}
    job = batch_models.Job(
        name,
        definition,
        queue,
        backend,
        log_backend=backend.logs_backend,
        container_overrides=None,
        eks_properties_override=None,
        depends_on=params.get("dependsOn"),
        parameters=params.get("parameters"),
        all_jobs=backend._jobs,
        timeout=params.get("timeout"),
        array_properties={},
        tags=tags,
    )
    job._transitions = []  # runs.BatchRun moves the status; moto's state manager must not
    job.retry_strategy = strategy
    job.mlscale_nodes = props
    job.mlscale_node_records = []
    backend._jobs[job.job_id] = job
    runs.BatchRun(job, backend.region_name).start()
    return job


def describe(job: Any) -> dict[str, Any]:
    """DescribeJobs' answer for a job the emulator ran (fields from the API reference's JobDetail)."""
    if not hasattr(job, "mlscale_nodes"):
        return _moto_describe(job)
    props = job.mlscale_nodes
    result = {
        "jobArn": job.arn,
        "jobName": job.job_name,
        "jobId": job.job_id,
        "jobQueue": job.job_queue.arn,
        "status": job.status,
        "attempts": job.attempts,
        "createdAt": batch_models.datetime2int_milliseconds(job.job_created_at),
        "dependsOn": job.depends_on or [],
        "jobDefinition": job.job_definition.arn,
        "parameters": job.parameters,
        "tags": job.backend.list_tags_for_resource(job.arn),
        "retryStrategy": job.retry_strategy,
        "platformCapabilities": job.job_definition.platform_capabilities or [],
    }
    if job.job_stopped_reason:
        result["statusReason"] = job.job_stopped_reason
    if job.status in ("STARTING", "RUNNING", "SUCCEEDED", "FAILED") and job.attempts:
        result["startedAt"] = job.attempts[-1]["startedAt"]
    if job.job_stopped:
        result["stoppedAt"] = batch_models.datetime2int_milliseconds(job.job_stopped_at)
    if job._get_attempt_duration():
        result["timeout"] = {"attemptDurationSeconds": job._get_attempt_duration()}
    if job.job_definition.type == "multinode":
        ranges = [
            {"targetNodes": str(index), "container": container} for index, container in enumerate(props["containers"])
        ]
        result["nodeProperties"] = {
            "numNodes": props["numNodes"],
            "mainNode": props["mainNode"],
            "nodeRangeProperties": ranges,
        }
    else:
        result["container"] = _container(props["containers"][0], (job.mlscale_node_records or [{}])[0])
    return result


def _container(container: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    details = {k: v for k, v in container.items()}
    for key in ("exitCode", "logStreamName", "taskArn"):
        if record.get(key) is not None:
            details[key] = record[key]
    if record.get("reason"):
        details["reason"] = record["reason"]
    elif record.get("exitCode") not in (None, 0):
        details["reason"] = f"exit code {record['exitCode']}"
    return details


def _describe_node(job: Any, index: int) -> dict[str, Any] | None:
    """A node job, `<job id>#<node index>`: its own status, container, exit code and log stream."""
    records = job.mlscale_node_records
    if index >= len(records):
        return None
    record = records[index]
    parent = describe(job)
    node = {k: parent[k] for k in ("jobArn", "jobName", "jobQueue", "jobDefinition", "createdAt", "parameters")}
    node.update(
        {
            "jobId": f"{job.job_id}#{index}",
            "status": record["status"],
            "nodeDetails": {"nodeIndex": index, "isMainNode": record["isMainNode"]},
            "container": _container(job.mlscale_nodes["containers"][index], record),
        }
    )
    for key in ("startedAt", "stoppedAt"):
        if record.get(key):
            node[key] = record[key]
    return node


def _describe_jobs(self, jobs: list[str] | None) -> list[dict[str, Any]]:
    wanted = list(jobs or [])
    if not wanted:
        return [describe(job) for job in self._jobs.values()]
    result = []
    for identifier in wanted:
        job_id, _, node = identifier.rpartition("#") if "#" in identifier else (identifier, "", "")
        job = self._jobs.get(job_id) or next((j for j in self._jobs.values() if j.arn == job_id), None)
        if job is None:
            continue
        if node:
            if hasattr(job, "mlscale_nodes") and node.isdigit() and (found := _describe_node(job, int(node))):
                result.append(found)
        else:
            result.append(describe(job))
    return result


def _terminate(self, job_id: str, reason: str, running_too: bool) -> None:
    if not job_id or not reason:
        raise ClientException("'jobId' and 'reason' are required fields (cannot be empty strings)")
    run = runs.run_of(job_id)
    if run is not None:
        run.terminate(reason, running_too)


def _submitjob(self) -> str:
    params = {
        key: self._get_param(key)
        for key in (
            "jobName",
            "jobDefinition",
            "jobQueue",
            "arrayProperties",
            "dependsOn",
            "containerOverrides",
            "nodeOverrides",
            "retryStrategy",
            "timeout",
            "parameters",
            "tags",
            "propagateTags",
        )
    }
    job = submit_job(self.batch_backend, params)
    return json.dumps({"jobId": job.job_id, "jobName": job.job_name, "jobArn": job.arn})


def _describe_job_definition(self) -> dict[str, Any]:
    result = _moto_describe_definition(self)
    if self.node_properties is not None:
        result["nodeProperties"] = self.node_properties
    return result


def _job_definition_from_cloudformation(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    """AWS::Batch::JobDefinition: its Type (multinode too), JobDefinitionName, Timeout and optional RetryStrategy."""
    backend = batch_models.batch_backends[account_id][region_name]
    properties = cloudformation_json["Properties"]

    def lower(key: str) -> Any:
        return _api_case(properties[key]) if key in properties else None

    return backend.register_job_definition(
        def_name=properties.get("JobDefinitionName") or resource_name,
        parameters=properties.get("Parameters", {}),
        _type=properties.get("Type", "container"),
        tags=properties.get("Tags", {}),
        retry_strategy=lower("RetryStrategy") or {},
        container_properties=lower("ContainerProperties"),
        node_properties=lower("NodeProperties"),
        eks_properties=lower("EksProperties"),
        timeout=lower("Timeout") or {},
        platform_capabilities=properties.get("PlatformCapabilities"),
        propagate_tags=properties.get("PropagateTags"),
    )


def _api_case(value: Any) -> Any:
    """CloudFormation's property names as the API's (NodeProperties -> nodeProperties), all the way down; list
    items that are AWS::NoValue (None) dropped. moto's lowercase_first_key leaves lists of objects as they are."""
    if isinstance(value, dict):
        return {key[:1].lower() + key[1:]: _api_case(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_api_case(item) for item in value if item is not None]
    return value


_THREAD_STATE = set(vars(threading.Thread()))  # what Thread.__init__ sets: the running side, never saved


def _job_getstate(self) -> dict[str, Any]:
    """moto's Job is a Thread (its Docker runner): save the job, not the thread (stderr, locks)."""
    return {key: value for key, value in self.__dict__.items() if key not in _THREAD_STATE}


def _job_setstate(self, state: dict[str, Any]) -> None:
    threading.Thread.__init__(self, daemon=True)  # a fresh, never started thread
    self.__dict__.update(state)


def recover() -> None:
    """After a restore: a job that was not finished when the emulator stopped ends FAILED."""
    for backend in backends_of(batch_models.batch_backends):
        for job in backend._jobs.values():
            if hasattr(job, "mlscale_nodes") and job.status not in ("SUCCEEDED", "FAILED"):
                job.job_stopped, job.job_stopped_reason = True, INTERRUPTED
                job._status = "FAILED"


def stop_all() -> None:
    runs.stop_all()


_moto_describe = batch_models.Job.describe
_moto_describe_definition = batch_models.JobDefinition.describe


def install() -> None:
    from mlscale_emulator.batch import events

    events.install()
    batch_models.Job.describe = describe
    # moto's Docker client, made on first read (even by /moto-api/data.json): jobs here never use Docker
    batch_models.Job.docker_client = property(lambda self: None)
    batch_models.Job.__getstate__ = _job_getstate
    batch_models.Job.__setstate__ = _job_setstate
    batch_models.BatchBackend.describe_jobs = _describe_jobs
    batch_models.BatchBackend.terminate_job = lambda self, job_id, reason: _terminate(self, job_id, reason, True)
    batch_models.BatchBackend.cancel_job = lambda self, job_id, reason: _terminate(self, job_id, reason, False)
    batch_models.JobDefinition.describe = _describe_job_definition
    batch_models.JobDefinition.create_from_cloudformation_json = classmethod(_job_definition_from_cloudformation)
    batch_responses.BatchResponse.submitjob = _submitjob
