"""A PySpark script as an AWS Glue Spark job, on the stage model."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.providers.amazon.aws.hooks.glue import GlueJobHook
from airflow.providers.amazon.aws.links.glue import GlueJobRunDetailsLink

from mlscale.operators.caching import CacheParts
from mlscale.operators.stage import StageOperator, Wait
from mlscale.specs.spark import GlueSparkSpec
from mlscale.waits.kinds import GLUE_JOB_RUN

if TYPE_CHECKING:
    from airflow.sdk import Context

ACTIVE = ("STARTING", "RUNNING", "STOPPING", "WAITING")
TASK_ARGUMENT = "--mlscale-task"  # which task run started a job run: a retried try finds its run by it


class GlueSparkJobOperator(StageOperator):
    """Run `spec.script` as a Glue Spark (glueetl) job and wait for it; the result names what it wrote.

    The provider's GlueJobOperator starts and waits for a Glue job too (and reattaches with `durable`); this
    stage adds what the stage model gives every mlscale stage: the spec checked before any AWS call (worker
    type and count, Glue version, arguments, S3 paths), a fingerprint of the script, its arguments and the
    objects of its `inputs` (the stage cache reuses the run that wrote `outputs`), lineage from `inputs` to
    `outputs`, and the same deferred wait, kill (BatchStopJobRun) and reattach as the other stages. The job
    definition is created, or updated when the script or settings changed; each run passes the spec's worker
    type, count, timeout and arguments. A retried try finds the run its task run started (argument
    `--mlscale-task`) and waits on it, or takes its result if it succeeded.
    XCom: job_name, job_run_id, state, execution_seconds, `<output>_uri` for each of `outputs`. With
    `wait_for_completion=False` it returns job_name and job_run_id at once, for the provider's GlueJobSensor.
    """

    aws_hook_class = GlueJobHook
    operator_extra_links = (GlueJobRunDetailsLink(),)
    ui_color = "#fde7c8"
    cache_stage = "spark"
    cache_noun = "Glue job run"
    cache_job_key = "job_run_id"

    def __init__(self, *, spec: GlueSparkSpec, poll_interval: float = 15, **kwargs: Any):
        super().__init__(spec=spec, poll_interval=poll_interval, **kwargs)

    # -- what decides the output ----------------------------------------------------------------------------

    def _code(self) -> dict[str, bytes]:
        """The script and the extra Python files, by name, as they will run."""
        files = [self.spec.script, *self.spec.extra_py_files]
        return {Path(path).name: Path(path).read_bytes() for path in files if not path.startswith("s3://")}

    def cache_parts(self, context: Context) -> CacheParts:
        spec = self.spec
        request = {
            "Arguments": {k: str(v) for k, v in sorted(spec.arguments.items())},
            "WorkerType": spec.worker_type,
            "NumberOfWorkers": spec.number_of_workers,
            "GlueVersion": spec.glue_version,
            "SparkConf": spec.conf_argument(),
        }
        code = {name: hashlib.sha256(body).hexdigest()[:16] for name, body in sorted(self._code().items())}
        if spec.script.startswith("s3://"):
            code["script"] = spec.script
        return CacheParts(request, inputs=dict(spec.inputs), outputs=dict(spec.outputs), extras={"code": code})

    def lineage(self, context: Context, result: dict[str, Any]) -> tuple[list, list, dict]:
        from mlscale.aws import lineage

        spec = self.spec
        raw = [lineage.s3(uri) for uris in spec.inputs.values() for uri in ([uris] if isinstance(uris, str) else uris)]
        details = {
            "job_run_id": result["job_run_id"],
            "worker_type": spec.worker_type,
            "number_of_workers": spec.number_of_workers,
            "glue_version": spec.glue_version,
            "execution_seconds": result.get("execution_seconds"),
        }
        return raw, [lineage.s3(uri) for uri in spec.outputs.values()], details

    # -- the job and its runs -------------------------------------------------------------------------------

    def _upload_code(self) -> tuple[str, list[str]]:
        """The script's and extra files' S3 URIs (content-addressed: a new version never replaces a running one)."""
        from mlscale.aws.sourcedir import upload_if_missing

        uris = {}
        for name, body in self._code().items():
            uri = f"{self.spec.code_location.rstrip('/')}/{hashlib.sha256(body).hexdigest()[:16]}/{name}"
            upload_if_missing(self.s3_hook(), body, uri)
            uris[name] = uri
        script = self.spec.script if self.spec.script.startswith("s3://") else uris[Path(self.spec.script).name]
        return script, [uris[Path(path).name] for path in self.spec.extra_py_files]

    def _ensure_job(self, script_uri: str) -> None:
        spec, glue = self.spec, self.hook.conn
        definition = {
            "Role": spec.role_arn,
            "Command": {"Name": "glueetl", "ScriptLocation": script_uri, "PythonVersion": "3"},
            "GlueVersion": spec.glue_version,
            "WorkerType": spec.worker_type,
            "NumberOfWorkers": spec.number_of_workers,
            "Timeout": spec.timeout_minutes,
            "ExecutionProperty": {"MaxConcurrentRuns": spec.max_concurrent_runs},
        }
        try:
            job = glue.get_job(JobName=spec.job_name)["Job"]
        except glue.exceptions.EntityNotFoundException:
            self.log.info("Creating Glue job %s (%s)", spec.job_name, script_uri)
            glue.create_job(Name=spec.job_name, Description="an mlscale Spark stage", **definition)
            return
        if any(job.get(key) != value for key, value in definition.items() if key != "Command") or (
            job.get("Command", {}).get("ScriptLocation") != script_uri
        ):
            self.log.info("Updating Glue job %s to this spec (%s)", spec.job_name, script_uri)
            glue.update_job(JobName=spec.job_name, JobUpdate=definition)

    def _task_key(self, context: Context) -> str:
        ti = context["ti"]
        return f"{ti.dag_id}/{ti.task_id}/{ti.run_id}/{getattr(ti, 'map_index', -1)}"

    def _earlier_run(self, key: str) -> dict | None:
        """The newest run this task run started, if any (GetJobRuns: newest first, up to 10 pages)."""
        request: dict[str, Any] = {"JobName": self.spec.job_name, "MaxResults": 200}
        glue = self.hook.conn
        for _ in range(10):
            try:
                page = glue.get_job_runs(**request)
            except glue.exceptions.EntityNotFoundException:  # no job yet: no run of it either
                return None
            mine = [r for r in page.get("JobRuns", []) if (r.get("Arguments") or {}).get(TASK_ARGUMENT) == key]
            if mine:
                return max(mine, key=lambda r: r["StartedOn"])
            if not page.get("NextToken"):
                return None
            request["NextToken"] = page["NextToken"]
        return None

    def _start(self, context: Context, key: str) -> str:
        spec = self.spec
        script_uri, py_files = self._upload_code()
        self._ensure_job(script_uri)
        arguments = {k: str(v) for k, v in spec.arguments.items()}
        arguments[TASK_ARGUMENT] = key
        if spec.conf_argument():
            arguments["--conf"] = spec.conf_argument()
        if py_files:
            arguments["--extra-py-files"] = ",".join(py_files)
        run_id = self.hook.conn.start_job_run(
            JobName=spec.job_name,
            Arguments=arguments,
            WorkerType=spec.worker_type,
            NumberOfWorkers=spec.number_of_workers,
            Timeout=spec.timeout_minutes,
        )["JobRunId"]
        self.log.info(
            "Started Glue job run %s of %s: %s x %s", run_id, spec.job_name, spec.number_of_workers, spec.worker_type
        )
        return run_id

    def _link(self, context: Context, run_id: str) -> None:
        from urllib.parse import quote

        GlueJobRunDetailsLink.persist(
            context=context,
            operator=self,
            region_name=self.hook.conn_region_name,
            aws_partition=self.hook.conn_partition,
            job_name=quote(self.spec.job_name, safe=""),
            job_run_id=run_id,
        )

    def advance(self, context: Context, settled: dict[str, Any] | None) -> dict[str, Any] | Wait:
        if settled is None:
            key = self._task_key(context)
            earlier = self._earlier_run(key)
            if earlier is not None and earlier["JobRunState"] in ACTIVE:
                self.log.info("Reattaching to Glue job run %s (%s)", earlier["Id"], earlier["JobRunState"])
                run_id = earlier["Id"]
            elif earlier is not None and earlier["JobRunState"] == "SUCCEEDED":
                self.log.info("Glue job run %s of this task run succeeded already", earlier["Id"])
                return self._result(earlier)
            else:
                run_id = self._start(context, key)
            self._link(context, run_id)
            return Wait(GLUE_JOB_RUN, f"{self.spec.job_name}/{run_id}")
        run = GLUE_JOB_RUN.describe(self.hook.conn, settled["resource_id"])
        return self._result(run)

    def submitted(self, context: Context, wait: Wait) -> dict[str, Any]:
        """`wait_for_completion=False`: what the provider's GlueJobSensor(job_name=, run_id=) waits on."""
        job_name, _, run_id = wait.resource_id.rpartition("/")
        return {**super().submitted(context, wait), "job_name": job_name, "job_run_id": run_id}

    def _result(self, run: dict[str, Any]) -> dict[str, Any]:
        return {
            "job_name": self.spec.job_name,
            "job_run_id": run["Id"],
            "state": run["JobRunState"],
            "execution_seconds": run.get("ExecutionTime"),
            **{f"{name}_uri": uri for name, uri in self.spec.outputs.items()},
        }
