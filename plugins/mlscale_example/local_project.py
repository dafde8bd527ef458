"""What `mlscale airflow` and `mlscale demo` (the emulator's local stack) need of this project, found through the
`mlscale.local_project` entry point: the emulator imports nothing of a project, so the project says here what
to set up and what its demo runs.

On AWS none of this runs: the arrivals are infrastructure created once (the docs give the AWS CLI commands),
the pool is the deployment's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from botocore.exceptions import ClientError

Clients = Callable[[str], object]  # a boto3 client of the emulator, by service name
RunDag = Callable[[Path, str, dict], dict]  # runs one DAG run; its state, run_id, XComs

DEMO_BAKE_SECONDS = 10
# The emulator's jobs take seconds: poll them every second, not every 5 s (the DAG's default, meant for AWS)
DEMO_POLL_SECONDS = 1
DEMO_RECORDS_PER_DAY = 10_000  # a week of 70,000 records: the model reaches >= 0.95 accuracy
# one training job at a time on one machine; MLSCALE_TRAINING_POOL_SLOTS for more
TRAINING_POOL_SLOTS = int(os.environ.get("MLSCALE_TRAINING_POOL_SLOTS", "1"))


class ExampleProject:
    """The digits pipeline: its producer writes a week of raw data, the pipeline trains and ships on it."""

    def airflow_environment(self) -> dict[str, str]:
        """The emulator's jobs take seconds: poll them every 2 s, not every 5 s (the default, meant for AWS)."""
        return {"AIRFLOW__MLSCALE_EXAMPLE__POLL_INTERVAL": "2"}

    def prepare_airflow(self) -> None:
        """Once Airflow's database is migrated (Airflow configured by the environment): the training pool."""
        ensure_training_pool()

    def provision(self, clients: Clients) -> str:
        """Before the triggerer starts the pipeline's queue watcher: the bucket, the SQS queue and the S3 event
        notification that start the pipeline when new raw data arrives; the queue's ARN. Idempotent."""
        from mlscale_example.pipeline.raw_data import arrivals_prefix, ensure_arrival_notifications
        from mlscale_example.settings import setting

        s3, bucket = clients("s3"), setting("bucket")
        try:
            s3.create_bucket(Bucket=bucket)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        return ensure_arrival_notifications(
            s3, clients("sqs"), bucket, arrivals_prefix(bucket), setting("arrivals_queue_url")
        )

    def demo_conf(self, text: str) -> dict:
        return run_conf(text)

    def demo(self, repo: Path, run_dag: RunDag, conf: dict, clients: Clients) -> dict:
        """The producer loads the week the pipeline run trains on (no arrival notice: this run is started here),
        then the pipeline runs on it."""
        producer = {"days": 7, "announce": False, "records_per_day": conf.pop("records_per_day", DEMO_RECORDS_PER_DAY)}
        result = run_dag(repo / "dags" / "mlscale_raw_data.py", "mlscale_raw_data", producer)
        produced = result["xcoms"].get("write_partitions") or {}
        if result["state"] == "success":
            # the emulator keeps the endpoint from the last demo, so this one updates it: bake briefly, not 300 s
            conf.setdefault("bake_seconds", DEMO_BAKE_SECONDS)
            conf.setdefault("poll_interval", DEMO_POLL_SECONDS)
            result = run_dag(repo / "dags" / "mlscale_pipeline.py", "mlscale_pipeline", conf)
            result["cluster_stack"] = _stack_status(clients, result["xcoms"])
        result["produced"] = produced
        return result

    def summary(self, result: dict, wall_seconds: float) -> str:
        return summary_text(result, wall_seconds)


PROJECT = ExampleProject()


def ensure_training_pool(slots: int = TRAINING_POOL_SLOTS) -> None:
    """The pool that bounds concurrent training jobs (Airflow must be configured by the environment).

    Deferred tasks count: a training task waits for its job in the triggerer, and the job still holds the quota.
    """
    from airflow.models.pool import Pool

    from mlscale_example.settings import setting

    name = setting("training_pool")
    Pool.create_or_update_pool(name, slots, "SageMaker training jobs at once (account quotas)", include_deferred=True)


def _stack_status(clients: Clients, xcoms: dict) -> str | None:
    """training_backend=batch: the run's cluster stack now (its teardown deleted it, or not)."""
    stack = (xcoms.get("plan_run") or {}).get("cluster_stack")
    if (xcoms.get("trained") or {}).get("backend") != "batch" or not stack:
        return None
    try:
        return clients("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"]
    except ClientError as error:
        # CloudFormation answers a stack that is gone with ValidationError, its only code for it
        if error.response["Error"]["Code"] == "ValidationError":
            return "DELETE_COMPLETE"
        return f"unknown ({error})"


def run_conf(text: str) -> dict:
    """The demo's DAG params: a JSON object whose keys are the pipeline's params, each valid for its form field;
    ValueError in one line naming what is wrong (before the emulator or Airflow starts)."""
    from airflow.sdk.definitions.param import ParamValidationError

    from mlscale_example.pipeline.form import pipeline_form

    try:
        conf = json.loads(text)
    except ValueError as error:
        raise ValueError(f"the params are not JSON: {error}") from None
    if not isinstance(conf, dict):
        raise ValueError(f"the params must be a JSON object of param: value, not {type(conf).__name__}")
    form = pipeline_form("mlscale")
    for name, value in conf.items():
        if name == "records_per_day":  # the demo's own: how much raw data its producer writes a day
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"records_per_day must be a whole number of records, 1 or more, not {value!r}")
            continue
        if name not in form:
            raise ValueError(
                f"unknown param {name!r}; the pipeline's params (and the demo's records_per_day): {', '.join(form)}"
            )
        try:
            form[name].resolve(value)
        except ParamValidationError as error:
            reason = str(error.__cause__ or error).splitlines()[0]
            raise ValueError(f"param {name!r}: {reason}") from None
    if conf.get("gate_mode") == "manual":  # dag.test() cannot wait for a person; the scheduler can
        raise ValueError(
            "gate_mode=manual needs a person and Airflow's scheduler: trigger the run in "
            "`mlscale airflow` instead (its approve task waits on the Required Actions page)"
        )
    return conf


def summary_text(result: dict, wall_seconds: float) -> str:
    xcoms = result["xcoms"]
    train = xcoms.get("trained") or xcoms.get("train") or {}
    metrics = train.get("final_metrics", {})
    plan = xcoms.get("plan_shards") or {}
    etl, storage, shards = plan.get("etl", {}), plan.get("storage", {}), plan.get("shards", {})
    quality = xcoms.get("quality") or {}
    lines = [
        "",
        "mlscale demo summary",
        f"  DAG run          {result['run_id']}: {result['state']}",
        f"  raw data         {_raw_line(result.get('produced') or {})}",
        f"  data engine      {_engine_line(xcoms)}",
        f"  ETL output       {etl.get('rows', '-')} rows, {etl.get('bytes', 0) / 1e6:.1f} MB"
        f" in {etl.get('objects', '-')} object(s)",
        f"  data quality     {quality.get('verdict', '-')}: {quality.get('report_uri', '-')}",
        f"  storage advisor  {storage.get('storage', '-')} {storage.get('input_mode') or ''}:"
        f" {storage.get('reason', '-')}",
        f"  FSx for Lustre   {_fsx_line(xcoms.get('stage_fsx'), plan)}",
        f"  shards           {_shards_line(xcoms, shards)}",
        *_training_lines(train, xcoms.get("plan_run") or {}, result.get("cluster_stack")),
        f"  test accuracy    {metrics.get('test:accuracy', '-')}",
        f"  model artifact   {train.get('model_artifact', '-')}",
        f"  diagnosis        {_diagnosis_line(xcoms.get('diagnose'), train)}",
        f"  evaluation       {_evaluation_line(xcoms.get('evaluate'))}",
        f"  compiled (Neo)   {_compile_line(xcoms.get('compile'), xcoms.get('evaluate'))}",
        f"  endpoint         {_endpoint_line(xcoms.get('deploy_endpoint'))}",
        f"  edge devices     {_edge_line(xcoms.get('deploy_edge'))}",
        f"  stage cache      {_cache_line(xcoms)}",
        f"  wall time        {wall_seconds:.1f} s (the pipeline run {result.get('run_seconds') or 0:.1f} s)",
    ]
    return "\n".join(lines)


def _engine_line(xcoms: dict) -> str:
    """Which engine prepared the data, its job, and what the data advisor said."""
    data_plan, output = xcoms.get("plan_data") or {}, xcoms.get("etl_output") or {}
    advice = data_plan.get("advice") or {}
    noun = "Glue Spark job run" if output.get("engine") == "spark" else "Athena query"
    return (
        f"{output.get('engine', '-')}: {noun} {output.get('job', '-')}; "
        f"the data advisor: {advice.get('engine', '-')}, {advice.get('reason', '-')}"
    )


def _shards_line(xcoms: dict, planned: dict) -> str:
    if (xcoms.get("etl_output") or {}).get("engine") == "spark":
        count = (xcoms.get("plan_data") or {}).get("spark_shard_count", "-")
        return f"{count}, written by the Spark job (planned from the raw data)"
    return (
        f"{planned.get('shards', '-')} x ~{planned.get('records_per_shard', '-')} records "
        f"(~{planned.get('bytes_per_shard', 0) / 1e6:.2f} MB): {planned.get('reason', '-')}"
    )


def _training_lines(train: dict, layout: dict, stack_status: str | None) -> list[str]:
    if train.get("backend") == "batch":
        return [
            f"  training backend batch: AWS Batch multi-node job on stack {layout.get('cluster_stack', '-')} "
            f"(now {stack_status or '-'})",
            f"  training job     {train.get('job_name', '-')} (job id {train.get('job_id', '-')})",
            f"  nodes            {train.get('node_count', '-')} ({train.get('attempts', '-')} attempt(s), "
            f"{train.get('seconds', '-')} s)",
        ]
    return [
        f"  training backend {train.get('backend', 'sagemaker')}",
        f"  training job     {train.get('job_name', '-')}",
        f"  instances        {train.get('instance_count', '-')} x {train.get('instance_type', '-')}",
        f"  billable seconds {train.get('billable_seconds', '-')}",
    ]


def _cache_line(xcoms: dict) -> str:
    """Which stages the cache reused (and from which run), which ran; off: just that."""
    stages = {
        task: value["cache"]
        for task, value in xcoms.items()
        if isinstance(value, dict) and "cache" in value and task != "trained"
    }  # trained: train's result again
    if not any(c.get("enabled") for c in stages.values()):
        return "off (every stage ran; params.cache=true reuses unchanged stages)"
    reused = [
        f"{task}: reused {c['reused']} from run {c['from_run']}" for task, c in sorted(stages.items()) if c["hit"]
    ]
    ran = sorted(task for task, c in stages.items() if not c["hit"])
    return "\n                   ".join([*reused, f"ran: {', '.join(ran) or 'none'}"])


def _raw_line(produced: dict) -> str:
    if not produced:
        return "-"
    days, written = produced["days"], produced["written"]
    already = len(days) - len(written)
    return f"{days[0]}..{days[-1]} (mlscale_raw_data): {len(written)} day(s) written, {already} already there"


def _edge_line(edge: dict | None) -> str:
    if not edge:
        return "-"
    devices = "; ".join(
        f"{thing}: {d['status']}, answers {d['answer']}" for thing, d in sorted(edge["devices"].items())
    )
    return f"deployment {edge['deployment_id']} {edge['status']}\n                   {devices}"


def _endpoint_line(endpoint: dict | None) -> str:
    if not endpoint:
        return "-"
    answer = endpoint.get("sample_answer") or ""
    try:
        scores = json.loads(answer)[0]
        answer = f"predicts {max(range(len(scores)), key=scores.__getitem__)} for the sample (a 0)"
    except (ValueError, TypeError, IndexError, KeyError):
        pass
    return (
        f"{endpoint['endpoint_name']} InService ({endpoint['endpoint_config']}, autoscaling "
        f"{endpoint['scaling_policy']}); {answer}"
    )


def _compile_line(compiled: dict | None, evaluation: dict | None) -> str:
    if compiled:
        return f"{compiled['target']}: {compiled['compiled_artifact']}"
    if evaluation and evaluation.get("decision") != "Approved":
        return f"skipped: the gate did not approve the model ({evaluation.get('decision')})"
    return "-"


def _evaluation_line(evaluation: dict | None) -> str:
    if not evaluation:
        return "-"
    metrics = evaluation["metrics"]
    return (
        f"accuracy {metrics['accuracy']:.4f}, macro-F1 {metrics['macro_f1']:.4f} on {metrics['samples']} held-out "
        f"records; gate: {evaluation['decision']} ({'; '.join(evaluation['reasons'])})"
        f"\n                   model package {evaluation['model_package_arn']}"
    )


def _diagnosis_line(diagnosis: dict | None, train: dict) -> str:
    if not diagnosis:
        # the diagnosis reads SageMaker's per-instance utilisation (/aws/sagemaker/TrainingJobs)
        return (
            "skipped: a Batch job publishes no SageMaker utilisation metrics"
            if train.get("backend") == "batch"
            else "-"
        )
    line = f"{diagnosis['verdict']} ({'; '.join(diagnosis['reasons'])})"
    stats = diagnosis.get("stats") or {}
    if stats:
        line += f"; evidence cpu p95 {stats.get('cpu_p95', 0):.0f}%, memory p95 {stats.get('memory_p95', 0):.0f}%"
        if "data_wait_fraction" in stats:
            line += f", data wait {stats['data_wait_fraction']:.0%}"
    step = diagnosis.get("recommendation")
    if step:
        line += (
            f"\n                   next: {step['step']}: {step['instance_count']} x {step['instance_type']}; "
            f"{'; '.join(step['changes'])}"
        )
    return line


def _fsx_line(staged: dict | None, planned: dict) -> str:
    if staged and staged.get("file_system_id"):
        return (
            f"{staged['file_system_id']} {staged['deployment_type']} {staged['storage_capacity_gib']} GiB, "
            f"{staged['files_imported']} files imported, mounted at {staged['directory_path']} (deleted after training)"
        )
    return "skipped: training reads from S3" if "fsx_enabled" in planned else "-"
