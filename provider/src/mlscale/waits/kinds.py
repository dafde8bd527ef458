"""Every kind of AWS resource a stage waits on, described as data: how to describe it, read its status, tell
success from failure, find the service's reason, and stop it.

Like a botocore waiter's JSON (an operation, a status path, acceptors), but one table for all the stages:
the trigger, the sensors and the operators' waits read it, so no stage writes its own polling loop. A kind
is looked up by name, which is what a serialized trigger carries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from mlscale.aws import errors
from mlscale.waits.batch_logs import BatchLogTail
from mlscale.waits.poller import service_time
from mlscale.waits.resource_kind import Client, ResourceKind
from mlscale.waits.summaries import (
    batch_summary,
    compilation_summary,
    processing_summary,
    training_summary,
    transform_summary,
)

# ResourceKind and failure_message are imported from here by the stages, sensors and triggers
__all__ = ["KINDS", "Client", "ResourceKind", "failure_message"]


def failure_message(event: dict[str, Any]) -> str:
    """What a failed wait says: the resource, its end state and the service's reason."""
    kind = KINDS[event["kind"]]
    if event["status"] == "error":
        return f"Waiting for {kind.noun} {event['resource_id']} failed: {event.get('reason')}"
    reason = event.get("reason") or "no reason given"
    if event["state"].lower() == "failed":
        return f"{kind.noun.capitalize()} {event['resource_id']} failed: {reason}"
    return f"{kind.noun.capitalize()} {event['resource_id']} ended {event['state']}: {reason}"


# -- SageMaker jobs ------------------------------------------------------------------------------------------


def _sagemaker_job(name: str, prefix: str, summary: Callable[[dict], dict]) -> ResourceKind:
    name_key, status_key = f"{prefix}JobName", f"{prefix}JobStatus"

    def status(description: dict) -> str:  # compilation jobs say COMPLETED, INPROGRESS: spell all as training does
        value = description[status_key]
        return value.capitalize() if value.isupper() else value

    def list_changed(client: Client, since: Any) -> tuple[list[dict], Any, int]:
        """The jobs modified after `since`, 100 a page (the API's largest), and the service's time."""
        summaries, first, calls, token = [], None, 0, None
        while True:
            page = getattr(client, f"list_{name}_jobs")(
                LastModifiedTimeAfter=since, MaxResults=100, **({"NextToken": token} if token else {})
            )
            calls += 1
            first = first or service_time(page)
            summaries += page[f"{prefix}JobSummaries"]
            token = page.get("NextToken")
            if not token:
                return summaries, first, calls

    return ResourceKind(
        name=name,
        noun=f"{name} job",
        service="sagemaker",
        list_changed=list_changed,
        describe=lambda client, job: getattr(client, f"describe_{name}_job")(**{name_key: job}),
        status=status,
        succeeded=("Completed",),
        failed=("Failed", "Stopped"),
        stop=lambda client, job: getattr(client, f"stop_{name}_job")(**{name_key: job}),
        log_group=f"/aws/sagemaker/{prefix}Jobs",
        name_key=name_key,
        status_key=status_key,
        summary=summary,
    )


TRAINING = _sagemaker_job("training", "Training", training_summary)
PROCESSING = _sagemaker_job("processing", "Processing", processing_summary)
TRANSFORM = _sagemaker_job("transform", "Transform", transform_summary)
COMPILATION = _sagemaker_job("compilation", "Compilation", compilation_summary)

# -- endpoints -------------------------------------------------------------------------------------------------

# Creating, Updating, SystemUpdating, RollingBack and Deleting are not ends: an update that rolls back
# ends InService (on the old config) or Failed, as the provider's SageMakerHook counts them.
ENDPOINT = ResourceKind(
    name="endpoint",
    noun="endpoint",
    service="sagemaker",
    describe=lambda client, name: client.describe_endpoint(EndpointName=name),
    status=lambda d: d["EndpointStatus"],
    succeeded=("InService",),
    failed=("Failed", "OutOfService"),
    # An endpoint still Creating bills: killing its stage deletes it. SageMaker has no call to cancel an update.
    stop=lambda client, name: client.delete_endpoint(EndpointName=name),
    name_key="EndpointName",
    status_key="EndpointStatus",
    summary=lambda d: {
        "endpoint_name": d["EndpointName"],
        "status": d["EndpointStatus"],
        "endpoint_config": d.get("EndpointConfigName"),
        "failure_reason": d.get("FailureReason"),
    },
)

# -- FSx for Lustre --------------------------------------------------------------------------------------------


def _fsx_reason(description: dict) -> str | None:
    return (description.get("FailureDetails") or {}).get("Message")


def _by_ids(call: str, ids_key: str, items_key: str, id_key: str, not_found: str):
    """describe_many for an FSx Describe* that takes ids (up to 50): FSx refuses the whole call when one id
    does not exist, so then each is asked alone."""

    def describe_many(client: Client, ids: list[str]) -> dict[str, dict | None]:
        try:
            items = getattr(client, call)(**{ids_key: ids})[items_key]
        except ClientError as error:
            if not errors.not_found(error, (not_found,)):
                raise
            if len(ids) == 1:
                return {ids[0]: None}
            return {k: v for one in ids for k, v in describe_many(client, [one]).items()}
        found = {item[id_key]: item for item in items}
        return {i: found.get(i) for i in ids}

    return describe_many


FSX_FILE_SYSTEM = ResourceKind(
    name="fsx_file_system",
    noun="FSx file system",
    service="fsx",
    describe=lambda client, fs: client.describe_file_systems(FileSystemIds=[fs])["FileSystems"][0],
    status=lambda d: d["Lifecycle"],
    succeeded=("AVAILABLE",),
    failed=("FAILED", "MISCONFIGURED", "MISCONFIGURED_UNAVAILABLE"),
    reason=_fsx_reason,
    stop=lambda client, fs: client.delete_file_system(FileSystemId=fs),  # a file system bills while it exists
    not_found_codes=("FileSystemNotFound",),
    name_key="FileSystemId",
    status_key="Lifecycle",
    batch_size=50,
    describe_many=_by_ids(
        "describe_file_systems", "FileSystemIds", "FileSystems", "FileSystemId", "FileSystemNotFound"
    ),
    summary=lambda d: {
        "file_system_id": d["FileSystemId"],
        "lifecycle": d["Lifecycle"],
        "mount_name": (d.get("LustreConfiguration") or {}).get("MountName"),
        "dns_name": d.get("DNSName"),
    },
)
FSX_ASSOCIATION = ResourceKind(
    name="fsx_association",
    noun="FSx data repository association",
    service="fsx",
    describe=lambda client, a: client.describe_data_repository_associations(AssociationIds=[a])["Associations"][0],
    status=lambda d: d["Lifecycle"],
    succeeded=("AVAILABLE",),
    failed=("FAILED", "MISCONFIGURED"),
    reason=_fsx_reason,
    not_found_codes=("DataRepositoryAssociationNotFound",),
    batch_size=50,
    describe_many=_by_ids(
        "describe_data_repository_associations",
        "AssociationIds",
        "Associations",
        "AssociationId",
        "DataRepositoryAssociationNotFound",
    ),
    summary=lambda d: {
        "association_id": d["AssociationId"],
        "lifecycle": d["Lifecycle"],
        "file_system_path": d.get("FileSystemPath"),
        "data_repository_path": d.get("DataRepositoryPath"),
    },
)
FSX_TASK = ResourceKind(
    name="fsx_task",
    noun="FSx data repository task",
    service="fsx",
    describe=lambda client, t: client.describe_data_repository_tasks(TaskIds=[t])["DataRepositoryTasks"][0],
    status=lambda d: d["Lifecycle"],
    succeeded=("SUCCEEDED",),
    failed=("FAILED", "CANCELED"),
    reason=_fsx_reason,
    stop=lambda client, t: client.cancel_data_repository_task(TaskId=t),
    not_found_codes=("DataRepositoryTaskNotFound",),
    name_key="TaskId",
    status_key="Lifecycle",
    batch_size=50,
    describe_many=_by_ids(
        "describe_data_repository_tasks", "TaskIds", "DataRepositoryTasks", "TaskId", "DataRepositoryTaskNotFound"
    ),
    summary=lambda d: {
        "task_id": d["TaskId"],
        "lifecycle": d["Lifecycle"],
        "type": d.get("Type"),
        "files": (d.get("Status") or {}).get("SucceededCount", 0),
    },
)

# -- Greengrass v2 ---------------------------------------------------------------------------------------------

GREENGRASS_DEPLOYMENT = ResourceKind(
    name="greengrass_deployment",
    noun="Greengrass deployment",
    service="greengrassv2",
    describe=lambda client, d: client.get_deployment(deploymentId=d),
    # ACTIVE until every target device has run it; CANCELED when the abort criteria trip or it is canceled
    status=lambda d: d["deploymentStatus"],
    succeeded=("COMPLETED",),
    failed=("CANCELED", "FAILED", "INACTIVE"),
    reason=lambda d: None,
    stop=lambda client, d: client.cancel_deployment(deploymentId=d),
    name_key="deploymentId",
    status_key="deploymentStatus",
    summary=lambda d: {
        "deployment_id": d["deploymentId"],
        "status": d["deploymentStatus"],
        "target_arn": d.get("targetArn"),
    },
)


def device_deployment_id(thing_name: str, deployment_id: str) -> str:
    """One device's share of a deployment, as one resource id: `<core device thing>/<deployment id>`."""
    return f"{thing_name}/{deployment_id}"


def _describe_device_deployment(client: Client, resource_id: str) -> dict:
    thing, deployment_id = resource_id.split("/", 1)
    pages = client.get_paginator("list_effective_deployments").paginate(coreDeviceThingName=thing)
    for page in pages:
        for effective in page["effectiveDeployments"]:
            if effective["deploymentId"] == deployment_id:
                return {**effective, "coreDeviceThingName": thing}
    # not on the device yet: AWS lists a deployment on a device only once the device has received it
    return {"deploymentId": deployment_id, "coreDeviceThingName": thing, "coreDeviceExecutionStatus": "PENDING"}


GREENGRASS_DEVICE = ResourceKind(
    name="greengrass_device",
    noun="Greengrass deployment on core device",
    service="greengrassv2",
    describe=_describe_device_deployment,
    status=lambda d: d["coreDeviceExecutionStatus"],
    succeeded=("SUCCEEDED", "COMPLETED"),
    failed=("FAILED", "CANCELED", "TIMED_OUT", "REJECTED"),
    reason=lambda d: d.get("reason") or None,
    name_key="coreDeviceThingName",
    status_key="coreDeviceExecutionStatus",
    summary=lambda d: {
        "thing_name": d["coreDeviceThingName"],
        "deployment_id": d["deploymentId"],
        "status": d["coreDeviceExecutionStatus"],
        "reason": d.get("reason", ""),
    },
)

# -- Athena ----------------------------------------------------------------------------------------------------


def _get_queries(client: Client, ids: list[str]) -> dict[str, dict | None]:
    """BatchGetQueryExecution (up to 50 ids); an id it could not answer is asked alone, whose error code
    then says whether it exists."""
    answer = client.batch_get_query_execution(QueryExecutionIds=ids)
    found: dict[str, dict | None] = {q["QueryExecutionId"]: q for q in answer["QueryExecutions"]}
    for unprocessed in answer.get("UnprocessedQueryExecutionIds") or []:
        found[unprocessed["QueryExecutionId"]] = ATHENA_QUERY.describe_or_none(client, unprocessed["QueryExecutionId"])
    return {i: found.get(i) for i in ids}


ATHENA_QUERY = ResourceKind(
    name="athena_query",
    noun="Athena query",
    service="athena",
    describe=lambda client, q: client.get_query_execution(QueryExecutionId=q)["QueryExecution"],
    status=lambda d: d["Status"]["State"],
    succeeded=("SUCCEEDED",),
    failed=("FAILED", "CANCELLED"),
    reason=lambda d: d["Status"].get("StateChangeReason") or (d["Status"].get("AthenaError") or {}).get("ErrorMessage"),
    stop=lambda client, q: client.stop_query_execution(QueryExecutionId=q),
    not_found_codes=("InvalidRequestException",),
    name_key="QueryExecutionId",
    describe_many=_get_queries,
    batch_size=50,
    summary=lambda d: {
        "query_execution_id": d["QueryExecutionId"],
        "state": d["Status"]["State"],
        "output_location": (d.get("ResultConfiguration") or {}).get("OutputLocation"),
    },
)

# -- AWS Glue job runs: the resource id is "<job name>/<run id>" (a run id names no job of its own) -----------


def _split_glue_run(resource_id: str) -> tuple[str, str]:
    job_name, _, run_id = resource_id.rpartition("/")
    return job_name, run_id


GLUE_JOB_RUN = ResourceKind(
    name="glue_job_run",
    noun="Glue job run",
    service="glue",
    describe=lambda client, r: client.get_job_run(
        JobName=_split_glue_run(r)[0], RunId=_split_glue_run(r)[1], PredecessorsIncluded=False
    )["JobRun"],
    status=lambda d: d["JobRunState"],
    succeeded=("SUCCEEDED",),
    failed=("FAILED", "STOPPED", "TIMEOUT", "ERROR", "EXPIRED"),
    reason=lambda d: (
        d.get("ErrorMessage") or (f"the run is {d['JobRunState']}" if d["JobRunState"] != "SUCCEEDED" else None)
    ),
    stop=lambda client, r: client.batch_stop_job_run(JobName=_split_glue_run(r)[0], JobRunIds=[_split_glue_run(r)[1]]),
    not_found_codes=("EntityNotFoundException",),
    name_key="Id",
    status_key="JobRunState",
    summary=lambda d: {"job_run_id": d["Id"], "job_name": d["JobName"], "state": d["JobRunState"]},
)

# -- AWS Batch -------------------------------------------------------------------------------------------------


def _describe_batch_job(client: Client, job_id: str) -> dict:
    jobs = client.describe_jobs(jobs=[job_id])["jobs"]
    if not jobs:  # DescribeJobs answers an empty list for an unknown id
        raise ClientError({"Error": {"Code": "ResourceNotFound", "Message": f"no Batch job {job_id}"}}, "DescribeJobs")
    return jobs[0]


def _describe_batch_jobs(client: Client, ids: list[str]) -> dict[str, dict | None]:
    found = {job["jobId"]: job for job in client.describe_jobs(jobs=ids)["jobs"]}  # up to 100 ids
    return {i: found.get(i) for i in ids}


def _batch_reason(d: dict) -> str | None:
    reason = d.get("statusReason")
    exit_code = ((d.get("attempts") or [{}])[-1].get("container") or {}).get("exitCode")
    return f"{reason} (main node exit code {exit_code})" if exit_code not in (None, 0) else reason


BATCH_JOB = ResourceKind(
    name="batch_job",
    noun="Batch job",
    service="batch",
    describe=_describe_batch_job,
    describe_many=_describe_batch_jobs,
    batch_size=100,
    status=lambda d: d["status"],
    succeeded=("SUCCEEDED",),
    failed=("FAILED",),
    reason=_batch_reason,
    stop=lambda client, job_id: client.terminate_job(
        jobId=job_id, reason="Terminated by mlscale: its Airflow task was killed"
    ),
    log_tail=BatchLogTail,
    name_key="jobName",
    status_key="status",
    summary=batch_summary,
)

KINDS: dict[str, ResourceKind] = {
    kind.name: kind
    for kind in (
        TRAINING,
        PROCESSING,
        TRANSFORM,
        COMPILATION,
        ENDPOINT,
        FSX_FILE_SYSTEM,
        FSX_ASSOCIATION,
        FSX_TASK,
        GREENGRASS_DEPLOYMENT,
        GREENGRASS_DEVICE,
        ATHENA_QUERY,
        GLUE_JOB_RUN,
        BATCH_JOB,
    )
}
