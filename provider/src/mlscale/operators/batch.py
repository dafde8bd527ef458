"""Distributed training on EC2: one AWS Batch multi-node parallel job per task run, waited for like every stage."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.batch_client import BatchClientHook
from airflow.sdk.exceptions import AirflowException

from mlscale.aws.stage_cache import FINGERPRINT_TAG
from mlscale.metric_regex import compile_metric
from mlscale.naming import attempt_job_name, check_job_name, resource_name
from mlscale.operators.caching import CacheParts
from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.batch import (
    LAUNCHER,
    BatchTrainingSpec,
    build_submit_request,
    job_definition_request,
)
from mlscale.specs.rules import require
from mlscale.waits.kinds import BATCH_JOB, failure_message

if TYPE_CHECKING:
    from airflow.sdk import Context

LAUNCHER_SOURCE = Path(__file__).resolve().parent.parent / "in_job" / "batch_node.py"
ACTIVE = ("SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING")


class BatchMultiNodeTrainingOperator(StageOperator):
    """Train on N EC2 nodes as one AWS Batch multi-node parallel job, and wait for it.

    The job's name comes from (dag_id, task_id, run_id, map_index); Batch names are not unique, so a retried
    task lists the queue's jobs of that name: one still running -> wait for it again, SUCCEEDED -> reuse
    it, FAILED -> a new attempt (`-a2`, ...). One task run never submits two jobs. Waiting (deferred by
    default, no attempt cap), each node's CloudWatch lines in the task log, kills (TerminateJob) and
    failures (the status reason and every node's exit code): StageOperator.

    Returns (XCom) the job id and name, node count, model artifact (script mode), final metrics (the
    spec's `metric_definitions` over the main node's log) and the number of attempts.

    :param spec: the job; see mlscale.specs.BatchTrainingSpec. Validated before any AWS call.
    :param job_name: explicit base name instead of the derived one.
    :param wait_for_completion: False ends the task once the job is submitted (XCom: job_id);
        mlscale.sensors.BatchJobSensor then waits for it.
    """

    aws_hook_class = BatchClientHook
    template_fields: Sequence[str] = (*StageOperator.template_fields, "job_name")
    ui_color = "#ffe0c2"
    cache_stage = "batch_training"
    cache_noun = "Batch job"
    cache_job_key = "job_id"

    def __init__(self, *, spec: BatchTrainingSpec, job_name: str | None = None, **kwargs: Any):
        super().__init__(spec=spec, **kwargs)
        self.job_name = job_name

    def before_start(self, context: Context) -> None:
        if self.job_name is not None:
            check_job_name(self.job_name, "Batch")

    # -- the stage ------------------------------------------------------------------------------------------

    def cache_parts(self, context: Context) -> CacheParts:
        """The SubmitJob request without the queue (where it runs does not change the model), the code, the
        job definition's containers (image, command, environment, resources; not its run-specific roles)."""
        from mlscale.aws.sourcedir import pack_source_dir

        spec = self.spec
        request = build_submit_request(
            spec, job_name="<job>", job_definition="<definition>", sourcedir_uri="<code>" if spec.script_mode else None
        )
        request.pop("tags", None)
        request.pop("jobQueue", None)
        extras: dict[str, Any] = {"definition": self._definition_identity}
        if spec.script_mode:
            extras["code"] = pack_source_dir(spec.source_dir, extra={LAUNCHER: LAUNCHER_SOURCE.read_bytes()})[1]
        # a path on the shared file system stays in the request as it is (EFS content is not hashed)
        inputs = {name: uri for name, uri in (spec.inputs or {}).items() if uri.startswith("s3://")}
        return CacheParts(request, inputs=inputs, extras=extras)

    def _definition_identity(self) -> Any:
        if not self.spec.job_definition:
            return job_definition_request(self.spec, "mlscale")["nodeProperties"]
        found = self.hook.conn.describe_job_definitions(jobDefinitions=[self.spec.job_definition])["jobDefinitions"]
        keep = ("image", "command", "environment", "resourceRequirements")
        return [
            [
                {key: (r.get("container") or {}).get(key) for key in keep}
                for r in (d.get("nodeProperties") or {}).get("nodeRangeProperties", [])
            ]
            for d in found
        ]

    def lineage(self, context: Context, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        spec = self.spec
        inputs = [lineage.s3(uri) for uri in (spec.inputs or {}).values() if uri.startswith("s3://")]
        details = {
            "job_id": result["job_id"],
            "node_count": result["node_count"],
            "vcpus": spec.vcpus,
            "gpus": spec.gpus,
            "hyperparameters": {k: str(v) for k, v in (spec.hyperparameters or {}).items()},
            "final_metrics": result.get("final_metrics") or {},
        }
        outputs = [lineage.s3(result["model_artifact"])] if result.get("model_artifact") else []
        return inputs, outputs, details

    def cache_reusable(self, entry: dict[str, Any]) -> str | None:
        job = BATCH_JOB.describe_or_none(self.hook.conn, entry["job"])
        if job is None:
            return "it no longer exists"
        if job["status"] != "SUCCEEDED":
            return f"it is {job['status']}"
        return super().cache_reusable(entry)

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        job_name, existing = self._current_attempt(context)
        if existing and settled is None and self._fingerprint is not None:  # it keeps what it was tagged with
            tags = BATCH_JOB.describe(self.hook.conn, existing["jobId"]).get("tags") or {}
            self.adopt_fingerprint(tags.get(FINGERPRINT_TAG), f"Batch job {job_name}")
        if existing and existing["status"] == "SUCCEEDED":
            if settled is None:
                self.log.info("Batch job %s (%s) already succeeded; reusing its result.", job_name, existing["jobId"])
            return self._result(existing["jobId"])
        if existing:
            self.log.info(
                "Batch job %s (%s) is %s; waiting for it again.", job_name, existing["jobId"], existing["status"]
            )
            return Wait(BATCH_JOB, existing["jobId"])
        return Wait(BATCH_JOB, self._submit(job_name))

    def submitted(self, context: Context, wait: Wait) -> dict[str, Any]:
        return {"job_id": wait.resource_id, "status": "SUBMITTED"}

    def failed(self, context: Context, event: dict[str, Any]) -> None:
        """The status reason, and each node that exited non-zero with its exit code (node jobs `<id>#<n>`)."""
        message = failure_message(event)
        try:
            job = BATCH_JOB.describe(self.hook.conn, event["resource_id"])
            count = (job.get("nodeProperties") or {}).get("numNodes", 0)
            nodes = self.hook.conn.describe_jobs(jobs=[f"{job['jobId']}#{i}" for i in range(min(count, 100))])["jobs"]
            exits = [
                f"node {n['nodeDetails']['nodeIndex']}{' (main)' if n['nodeDetails']['isMainNode'] else ''} "
                f"exited {n['container']['exitCode']}"
                for n in nodes
                if (n.get("container") or {}).get("exitCode") not in (None, 0)
            ]
            if exits:
                message += "; " + ", ".join(exits)
        except Exception as error:  # noqa: BLE001 - the job's own reason is still worth raising
            self.log.warning("Could not read the nodes' exit codes: %s", error)
        raise AirflowException(message)

    # -- names and finding --------------------------------------------------------------------------------

    def _attempt_name(self, context: Context, attempt: int) -> str:
        if self.job_name:
            return attempt_job_name(self.job_name, attempt, "Batch")
        ti = context["ti"]
        return resource_name(ti.dag_id, ti.task_id, ti.run_id, getattr(ti, "map_index", -1), attempt=attempt)

    def _jobs_named(self, name: str) -> list[dict[str, Any]]:
        """The queue's jobs of this name, newest first (ListJobs with a JOB_NAME filter lists every status)."""
        pages = self.hook.conn.get_paginator("list_jobs").paginate(
            jobQueue=self.spec.job_queue, filters=[{"name": "JOB_NAME", "values": [name]}]
        )
        jobs = [job for page in pages for job in page["jobSummaryList"] if job["jobName"] == name]
        return sorted(jobs, key=lambda job: job.get("createdAt", 0), reverse=True)

    def _current_attempt(self, context: Context) -> tuple[str, dict | None]:
        attempt = 1
        while True:
            name = self._attempt_name(context, attempt)
            jobs = self._jobs_named(name)
            live = next((job for job in jobs if job["status"] in ACTIVE + ("SUCCEEDED",)), None)
            if live is not None or not jobs:
                return name, live
            self.log.info("Batch job %s (%s) FAILED; the next attempt gets a new name.", name, jobs[0]["jobId"])
            attempt += 1

    # -- submitting -----------------------------------------------------------------------------------------

    def _submit(self, job_name: str) -> str:
        spec = self.spec
        definition = spec.job_definition or self._registered_definition()
        if spec.job_definition:
            self._check_definition(definition)
        sourcedir_uri = None
        if spec.script_mode:
            sourcedir_uri = self._upload_source()
        request = build_submit_request(spec, job_name=job_name, job_definition=definition, sourcedir_uri=sourcedir_uri)
        if self._fingerprint:
            request["tags"][FINGERPRINT_TAG] = self._fingerprint
        response = self.hook.conn.submit_job(**request)
        self.log.info(
            "Submitted Batch job %s (%s): %d nodes of %d vCPUs on queue %s",
            job_name,
            response["jobId"],
            spec.node_count,
            spec.vcpus,
            spec.job_queue,
        )
        return response["jobId"]

    def _check_definition(self, definition: str) -> None:
        """A given job definition must be an ACTIVE multi-node one whose main node is the spec's."""
        found = self.hook.conn.describe_job_definitions(jobDefinitions=[definition])["jobDefinitions"]
        if ":" not in definition.rsplit("/", 1)[-1]:  # a bare name: its latest ACTIVE revision
            found = sorted((d for d in found if d["status"] == "ACTIVE"), key=lambda d: d["revision"])[-1:]
        require(bool(found), "job_definition", "names no ACTIVE job definition", definition)
        nodes = found[0].get("nodeProperties")
        require(
            found[0]["type"] == "multinode" and nodes is not None,
            "job_definition",
            "must be a multi-node parallel job definition (type multinode)",
            definition,
        )
        require(
            int(nodes.get("mainNode", 0)) == self.spec.main_node_index,
            "main_node_index",
            f"must be the job definition's mainNode ({nodes.get('mainNode')}): SubmitJob cannot change it",
            self.spec.main_node_index,
        )

    def _registered_definition(self) -> str:
        """A job definition for `image`, registered once: its name is a hash of what it holds."""
        request = job_definition_request(self.spec, "mlscale")
        digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:12]
        name = f"mlscale-mnp-{digest}"
        found = self.hook.conn.describe_job_definitions(jobDefinitionName=name, status="ACTIVE")["jobDefinitions"]
        if found:
            return found[0]["jobDefinitionArn"]
        self.log.info("Registering job definition %s for image %s", name, self.spec.image)
        return self.hook.conn.register_job_definition(**{**request, "jobDefinitionName": name})["jobDefinitionArn"]

    def _upload_source(self) -> str:
        from mlscale.aws.sourcedir import pack_source_dir, upload_if_missing

        archive, content_hash = pack_source_dir(self.spec.source_dir, extra={LAUNCHER: LAUNCHER_SOURCE.read_bytes()})
        uri = self.spec.sourcedir_uri(content_hash)
        if upload_if_missing(self.s3_hook(), archive, uri):
            self.log.info("Uploaded source dir %s (with mlscale's node launcher) to %s", self.spec.source_dir, uri)
        return uri

    # -- the result -----------------------------------------------------------------------------------------

    def _result(self, job_id: str) -> dict[str, Any]:
        description = BATCH_JOB.describe(self.hook.conn, job_id)
        result = BATCH_JOB.summary(description)
        result["final_metrics"] = self._final_metrics(description)
        self.log.info("Batch job %s succeeded: %s", result["job_name"], result)
        return result

    def _final_metrics(self, description: dict[str, Any]) -> dict[str, float]:
        """The last value each metric regex matches in the main node's log, as SageMaker's MetricDefinitions."""
        if not self.spec.metric_definitions:
            return {}
        main = (description.get("nodeProperties") or {}).get("mainNode", 0)
        node = BATCH_JOB.describe(self.hook.conn, f"{description['jobId']}#{main}")
        stream = (node.get("container") or {}).get("logStreamName")
        if not stream:
            return {}
        from airflow.providers.amazon.aws.hooks.logs import AwsLogsHook

        logs = AwsLogsHook(
            aws_conn_id=self.aws_conn_id, region_name=self.region_name, verify=self.verify, config=self.botocore_config
        )
        patterns = {name: compile_metric(regex) for name, regex in self.spec.metric_definitions.items()}
        metrics: dict[str, float] = {}
        for event in logs.get_log_events("/aws/batch/job", stream, start_from_head=True):
            for name, pattern in patterns.items():
                if match := pattern.search(event["message"]):
                    try:
                        metrics[name] = float(match.group(1))
                    except ValueError:
                        continue
        return metrics
