"""mlscale's example pipeline, after the AWS whitepaper *Power Machine Learning at Scale*.

    stage_raw_data -> etl (Athena UNLOAD) -> quality (Athena aggregates, plots, gate)
        -> plan_shards (storage advisor) -> shard (SageMaker Processing)
        -> stage_fsx (FSx for Lustre, only when the advisor says so) -> train (SageMaker, DDP)
        -> diagnose (CloudWatch utilisation -> bottleneck and the next configuration)
        -> evaluate (Batch Transform, metrics, model registry) -> gate -> compile (Neo)
        -> choose_targets -> deploy_endpoint and/or deploy_edge (Greengrass v2); delete_fsx (teardown)

Runs against AWS or the local emulator: only the `aws_default` connection
differs (`endpoint_url` in its extra points it at the emulator). Weekly: each
run works on its data interval, so backfills retrain on past weeks.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pendulum
from airflow.providers.amazon.aws.operators.athena import AthenaOperator
from airflow.sdk import DAG, Asset, Param, task

from mlscale.operators import (
    DataQualityOperator,
    FSxDeleteFileSystemOperator,
    FSxLustreStageOperator,
    GreengrassEdgeDeployOperator,
    SageMakerBatchEvaluationOperator,
    SageMakerEndpointDeployOperator,
    SageMakerNeoCompilationOperator,
    SageMakerProcessingScriptOperator,
    SageMakerScriptTrainingOperator,
    TrainingDiagnosisOperator,
)
from mlscale.specs import CompilationSpec, EndpointSpec, EvaluationSpec, ProcessingInput, ProcessingOutput, ProcessingSpec, TrainingSpec

AWS_CONN_ID = os.environ.get("MLSCALE_AWS_CONN_ID", "aws_default")
BUCKET = os.environ.get("MLSCALE_BUCKET", "mlscale-demo")
ROLE_ARN = os.environ.get("MLSCALE_ROLE_ARN", "arn:aws:iam::123456789012:role/mlscale-sagemaker")
DATABASE = os.environ.get("MLSCALE_GLUE_DATABASE", "mlscale")
# AWS's PyTorch containers (CPU); use your region's registry on AWS.
TRAINING_IMAGE = os.environ.get(
    "MLSCALE_TRAINING_IMAGE",
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
)
PROCESSING_IMAGE = os.environ.get("MLSCALE_PROCESSING_IMAGE", TRAINING_IMAGE)
INFERENCE_IMAGE = os.environ.get(
    "MLSCALE_INFERENCE_IMAGE",
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
)
# FSx for Lustre and FileSystemDataSource channels live in a VPC subnet (one Availability Zone).
SUBNET_ID = os.environ.get("MLSCALE_SUBNET_ID", "subnet-0123456789abcdef0")
SECURITY_GROUP_ID = os.environ.get("MLSCALE_SECURITY_GROUP_ID", "sg-0123456789abcdef0")
EDGE_THING_GROUP = os.environ.get("MLSCALE_EDGE_THING_GROUP", "mlscale-edge-fleet")
# Training jobs count against account quotas (instances per type): this pool bounds how many run at once,
# backfills included. `mlscale airflow` and `mlscale demo` create it (MLSCALE_TRAINING_POOL_SLOTS slots).
TRAINING_POOL = os.environ.get("MLSCALE_TRAINING_POOL", "mlscale_training")
# A flattened "0" from the digits data: what a client (endpoint) or an edge app would classify.
SAMPLE = [[0, 0, 0.3125, 0.8125, 0.5625, 0.0625, 0, 0, 0, 0, 0.8125, 0.9375, 0.625, 0.9375, 0.3125, 0, 0, 0.1875,
           0.9375, 0.125, 0, 0.6875, 0.5, 0, 0, 0.25, 0.75, 0, 0, 0.5, 0.5, 0, 0, 0.3125, 0.5, 0, 0, 0.5625, 0.5, 0,
           0, 0.25, 0.6875, 0, 0.0625, 0.75, 0.4375, 0, 0, 0.125, 0.875, 0.3125, 0.625, 0.75, 0, 0, 0, 0, 0.375,
           0.8125, 0.625, 0, 0, 0]]
INCLUDE = Path(__file__).resolve().parent.parent / "include"
RAW_PREFIX = f"s3://{BUCKET}/mlscale/raw/digits/"
# Fresh training data: downstream DAGs can schedule on it (schedule=[TRAINING_DATA]).
TRAINING_DATA = Asset(name="mlscale_training_data", uri=f"s3://{BUCKET}/mlscale/etl/")
LOADER_WORKERS = 1


def _xcom(task_id: str, key: str) -> str:
    return f"{{{{ ti.xcom_pull(task_ids='{task_id}')['{key}'] }}}}"


def training_window(start, end, run_after, days: int = 7):
    """The days to train on: the data interval, or the week before a run that has none.

    Airflow 3's @weekly runs have zero-width intervals, and a run triggered without a
    logical date (the REST API's or `airflow dags trigger`'s default) has no interval at all.
    """
    if start is None or end is None or end <= start:
        end = (end or run_after).start_of("day")
        return end.subtract(days=days), end
    return start.start_of("day"), end.start_of("day")


def _clear_prefix(context) -> None:
    """Before each ETL try: UNLOAD needs an empty location, and a failed try may have left files."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    uri = context["ti"].xcom_pull(task_ids="stage_raw_data")["etl_prefix"]
    hook = S3Hook(aws_conn_id=AWS_CONN_ID)
    bucket, prefix = hook.parse_s3_url(uri)
    keys = hook.list_keys(bucket_name=bucket, prefix=prefix)
    if keys:
        hook.delete_objects(bucket=bucket, keys=keys)


with DAG(
    dag_id="mlscale_pipeline",
    description="ETL -> shards -> distributed training, after the AWS whitepaper Power Machine Learning at Scale",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule="@weekly",
    catchup=False,
    max_active_runs=2,
    render_template_as_native_obj=True,
    template_searchpath=[str(INCLUDE)],
    tags=["mlscale", "sagemaker"],
    params={
        "database": Param(DATABASE, type="string", description="Glue database of the raw table"),
        "records_per_day": Param(10_000, type="integer", minimum=100, maximum=1_000_000,
                                 description="Raw records the generator writes per day of the interval"),
        "instance_type": Param("ml.c5.xlarge", type="string", pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$",
                               description="SageMaker training instance type"),
        "instance_count": Param(2, type="integer", minimum=1, maximum=16,
                                description="Training instances; more than one trains with DDP"),
        "gpus_per_instance": Param(1, type="integer", minimum=1, maximum=16,
                                   description="For the storage advisor (a CPU instance counts as 1)"),
        "samples_per_second": Param(5000, type="integer", minimum=1,
                                    description="Expected training throughput per GPU, for the storage advisor"),
        "epochs": Param(4, type="integer", minimum=1, maximum=200),
        "quality": Param({"min_rows": 1000, "max_missing_fraction": 0.01, "max_duplicate_fraction": 0.01,
                          "min_label_share": 0.05, "max_drift_psi": 0.2}, type="object",
                         description="Data-quality thresholds; a failed check stops the run"),
        "min_accuracy": Param(0.9, type="number", minimum=0, maximum=1,
                              description="Quality gate: held-out accuracy a model needs to be approved"),
        "champion_tolerance": Param(0.01, type="number", minimum=0, maximum=1,
                                    description="Quality gate: how much worse than the approved champion is tolerated"),
        "target_device": Param("ml_c5", type="string",
                               description="Neo target (a botocore TargetDevice: ml_c5, ml_g4dn, jetson_nano, ...)"),
        "deploy_target": Param("both", enum=["endpoint", "edge", "both", "none"],
                               description="Where an approved model goes: a real-time endpoint, the edge fleet, "
                                           "both, or none (register only). Backfill runs never deploy"),
        "bake_seconds": Param(300, type="integer", minimum=0, maximum=3600,
                              description="Endpoint updates (blue/green): how long the new fleet takes all traffic, "
                                          "watched by rollback alarms, before the old fleet goes"),
        "storage": Param("auto", enum=["auto", "s3", "fsx_lustre"],
                         description="Where training reads from: the storage advisor's choice, or forced"),
        "metrics_period": Param(60, type="integer", minimum=1, maximum=3600,
                                description="CloudWatch period (s) of the utilisation the diagnosis reads"),
        "poll_interval": Param(5, type="integer", minimum=1, maximum=300,
                               description="Seconds between status checks of long-running jobs"),
    },  # fmt: skip
) as dag:

    @task
    def stage_raw_data(params=None, data_interval_start=None, data_interval_end=None, dag_run=None,
                       run_id=None) -> dict:  # fmt: skip
        """Make sure the interval's raw partitions exist (the generator stands in for upstream systems)."""
        import sys

        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from mlscale.hooks.catalog import ensure_parquet_table

        sys.path.insert(0, str(INCLUDE / "data"))
        from digits_raw import write_day

        start, end = training_window(data_interval_start, data_interval_end, pendulum.instance(dag_run.run_after))
        s3 = S3Hook(aws_conn_id=AWS_CONN_ID)
        if not s3.check_for_bucket(BUCKET):
            s3.create_bucket(BUCKET)
        bucket, prefix = s3.parse_s3_url(RAW_PREFIX)
        written = []
        day = start
        while day < end:
            if not s3.list_keys(bucket_name=bucket, prefix=f"{prefix}dt={day:%Y-%m-%d}/"):
                written.append(write_day(s3.get_conn(), bucket, prefix, day.date(), params["records_per_day"]))
            day = day.add(days=1)
        glue = AwsBaseHook(aws_conn_id=AWS_CONN_ID, client_type="glue").get_conn()
        ensure_parquet_table(glue, params["database"], "raw_digits", RAW_PREFIX,
                             {"record_id": "string", "label": "bigint", "pixels": "binary"}, date_partition="dt")  # fmt: skip
        run_slug = re.sub(r"[^A-Za-z0-9=-]+", "-", run_id).strip("-")
        return {
            "window_start": start.to_date_string(),
            "window_end": end.to_date_string(),
            "days_written": len(written),
            "etl_prefix": f"s3://{BUCKET}/mlscale/etl/{run_slug}/",
            "run_prefix": f"s3://{BUCKET}/mlscale/runs/{run_slug}",
        }

    raw = stage_raw_data()

    etl = AthenaOperator(
        task_id="etl",
        aws_conn_id=AWS_CONN_ID,
        query="sql/etl_digits.sql",
        database="{{ params.database }}",
        output_location=f"s3://{BUCKET}/mlscale/athena-results/",
        sleep_time=2,
        on_execute_callback=_clear_prefix,
        outlets=[TRAINING_DATA],
    )

    quality = DataQualityOperator(
        task_id="quality",
        aws_conn_id=AWS_CONN_ID,
        database="{{ params.database }}",
        table="raw_digits",
        where=("dt >= '" + _xcom("stage_raw_data", "window_start") + "' AND dt < '"
               + _xcom("stage_raw_data", "window_end") + "'"),
        data_prefix=_xcom("stage_raw_data", "etl_prefix"),
        report_prefix=f"s3://{BUCKET}/mlscale/quality",
        output_location=f"s3://{BUCKET}/mlscale/athena-results/",
        thresholds="{{ params.quality }}",
    )

    @task
    def plan_shards(params=None, ti=None) -> dict:
        """Measure the ETL output; the storage advisor picks the input mode and the shard count."""
        from airflow.providers.amazon.aws.hooks.s3 import S3Hook

        from mlscale.advisors.sharding import plan_shards as shard_plan
        from mlscale.advisors.storage import StorageNeeds, advise_storage
        from mlscale.hooks.catalog import parquet_stats

        stats = parquet_stats(S3Hook(aws_conn_id=AWS_CONN_ID).get_conn(), ti.xcom_pull(task_ids="stage_raw_data")["etl_prefix"])
        if stats["rows"] == 0:
            raise ValueError("etl: the data interval holds no valid records; nothing to train on")
        choice = advise_storage(StorageNeeds(
            dataset_bytes=stats["bytes"], object_count=stats["objects"], epochs=params["epochs"],
            instances=params["instance_count"], gpus_per_instance=params["gpus_per_instance"],
            samples_per_second_per_gpu=params["samples_per_second"], bytes_per_sample=stats["bytes"] / stats["rows"]))  # fmt: skip
        plan = shard_plan(stats["bytes"], stats["rows"], params["instance_count"], LOADER_WORKERS)
        use_fsx = params["storage"] == "fsx_lustre" or (params["storage"] == "auto" and choice.storage == "fsx_lustre")
        fsx = {"enabled": use_fsx, "deployment_type": choice.fsx_deployment_type or "SCRATCH_2",
               "storage_capacity_gib": choice.fsx_storage_capacity_gib or 1200,
               "per_unit_storage_throughput": choice.fsx_throughput_mb_per_s_per_tib
               if choice.fsx_deployment_type == "PERSISTENT_2" else None,
               "reason": f"storage={params['storage']}; the advisor: {choice.reason}"}  # fmt: skip
        print(f"ETL output: {stats}; storage: {choice.reason} Shards: {plan.reason} FSx: {fsx}")
        return {"etl": stats, "storage": choice.to_dict(), "shards": plan.to_dict(), "fsx": fsx,
                "input_mode": choice.input_mode or "File"}  # fmt: skip

    plan = plan_shards()

    shard = SageMakerProcessingScriptOperator(
        task_id="shard",
        aws_conn_id=AWS_CONN_ID,
        poll_interval="{{ params.poll_interval }}",
        spec=ProcessingSpec(
            script=str(INCLUDE / "processing" / "shard.py"),
            role_arn=ROLE_ARN,
            image_uri=PROCESSING_IMAGE,
            code_location=f"s3://{BUCKET}/mlscale/code/processing",
            arguments=["--shards", "{{ ti.xcom_pull(task_ids='plan_shards')['shards']['shards'] }}",
                       "--seed", "{{ ti.xcom_pull(task_ids='stage_raw_data')['window_start'] | replace('-', '') }}",
                       "--test-fraction", "0.1"],
            inputs={"data": ProcessingInput(_xcom("stage_raw_data", "etl_prefix"), "/opt/ml/processing/input/data")},
            outputs={
                "shards": ProcessingOutput("/opt/ml/processing/output/shards",
                                           _xcom("stage_raw_data", "run_prefix") + "/shards/train/"),
                "test": ProcessingOutput("/opt/ml/processing/output/test",
                                         _xcom("stage_raw_data", "run_prefix") + "/shards/test/"),
                "eval": ProcessingOutput("/opt/ml/processing/output/eval",
                                         _xcom("stage_raw_data", "run_prefix") + "/eval/"),
            },  # fmt: skip
            instance_type="ml.m5.xlarge",
            max_runtime_seconds=3600,
        ),
    )

    fsx_plan = "ti.xcom_pull(task_ids='plan_shards')['fsx']"
    stage_fsx = FSxLustreStageOperator(
        task_id="stage_fsx",
        aws_conn_id=AWS_CONN_ID,
        enabled="{{ " + fsx_plan + "['enabled'] }}",
        skip_reason="{{ " + fsx_plan + "['reason'] }}",
        data_repository_path="{{ ti.xcom_pull(task_ids='shard')['outputs']['shards'] }}",
        deployment_type="{{ " + fsx_plan + "['deployment_type'] }}",
        storage_capacity_gib="{{ " + fsx_plan + "['storage_capacity_gib'] }}",
        per_unit_storage_throughput="{{ " + fsx_plan + "['per_unit_storage_throughput'] }}",
        subnet_id=SUBNET_ID,
        security_group_ids=[SECURITY_GROUP_ID],
        file_system_path="/shards",
        poll_interval="{{ params.poll_interval }}",
    )

    @task
    def training_inputs(ti=None) -> dict:
        """Shards from FSx (a FileSystemDataSource channel, in the VPC) when staged, else from S3."""
        outputs = ti.xcom_pull(task_ids="shard")["outputs"]
        fsx = ti.xcom_pull(task_ids="stage_fsx")
        if not fsx:
            return {"inputs": {"train": outputs["shards"], "test": outputs["test"]}, "subnets": [],
                    "security_group_ids": []}  # fmt: skip
        train = {"file_system_id": fsx["file_system_id"], "directory_path": fsx["directory_path"]}
        return {"inputs": {"train": train, "test": outputs["test"]}, "subnets": [SUBNET_ID],
                "security_group_ids": [SECURITY_GROUP_ID]}  # fmt: skip

    channels = training_inputs()

    train = SageMakerScriptTrainingOperator(
        task_id="train",
        pool=TRAINING_POOL,
        aws_conn_id=AWS_CONN_ID,
        poll_interval="{{ params.poll_interval }}",
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            role_arn=ROLE_ARN,
            image_uri=TRAINING_IMAGE,
            output_path=f"s3://{BUCKET}/mlscale/models",
            instance_type="{{ params.instance_type }}",
            instance_count="{{ params.instance_count }}",
            distribution="torch_distributed",
            hyperparameters={"epochs": "{{ params.epochs }}", "batch-size": 64, "lr": 0.003,
                             "loader-workers": LOADER_WORKERS},  # fmt: skip
            inputs=_xcom("training_inputs", "inputs"),
            subnets=_xcom("training_inputs", "subnets"),
            security_group_ids=_xcom("training_inputs", "security_group_ids"),
            input_mode=_xcom("plan_shards", "input_mode"),
            metric_definitions={
                "train:loss": r"train_loss=([0-9.]+)",
                "test:loss": r"test_loss=([0-9.]+)",
                "test:accuracy": r"test_accuracy=([0-9.]+)",
                "data:wait_fraction": r"data_wait_fraction=([0-9.]+)",
            },
            max_runtime_seconds=3600,
            tags={"project": "mlscale"},
        ),
    )

    delete_fsx = FSxDeleteFileSystemOperator(
        task_id="delete_fsx",
        aws_conn_id=AWS_CONN_ID,
        file_system_id="{{ (ti.xcom_pull(task_ids='stage_fsx') or {}).get('file_system_id') }}",
    )

    diagnose = TrainingDiagnosisOperator(
        task_id="diagnose",
        aws_conn_id=AWS_CONN_ID,
        job_name=_xcom("train", "job_name"),
        loader_workers=LOADER_WORKERS,
        period="{{ params.metrics_period }}",
    )

    evaluate = SageMakerBatchEvaluationOperator(
        task_id="evaluate",
        aws_conn_id=AWS_CONN_ID,
        poll_interval="{{ params.poll_interval }}",
        spec=EvaluationSpec(
            model_artifact=_xcom("train", "model_artifact"),
            role_arn=ROLE_ARN,
            image_uri=INFERENCE_IMAGE,
            features_uri="{{ ti.xcom_pull(task_ids='shard')['outputs']['eval'] }}features/",
            labels_uri="{{ ti.xcom_pull(task_ids='shard')['outputs']['eval'] }}labels/",
            output_uri=_xcom("stage_raw_data", "run_prefix") + "/evaluation/",
            model_package_group="mlscale-digits",
            min_value="{{ params.min_accuracy }}",
            champion_tolerance="{{ params.champion_tolerance }}",
        ),
    )

    @task.short_circuit
    def gate(ti=None) -> bool:
        """Only an Approved model goes on: everything downstream (deployment) is skipped otherwise."""
        result = ti.xcom_pull(task_ids="evaluate")
        print(f"model package {result['model_package_arn']}: {result['decision']}; " + "; ".join(result["reasons"]))
        return result["decision"] == "Approved"

    compile_model = SageMakerNeoCompilationOperator(
        task_id="compile",
        aws_conn_id=AWS_CONN_ID,
        poll_interval="{{ params.poll_interval }}",
        spec=CompilationSpec(
            model_artifact=_xcom("train", "model_artifact"),
            role_arn=ROLE_ARN,
            output_uri=_xcom("stage_raw_data", "run_prefix") + "/compiled/",
            input_shapes={"input0": [1, 64]},  # one flattened 8x8 image, as the endpoint receives it
            target_device="{{ params.target_device }}",
        ),
    )

    raw >> etl >> quality >> plan >> shard >> stage_fsx >> channels >> train >> [diagnose, evaluate]
    deploy_endpoint = SageMakerEndpointDeployOperator(
        task_id="deploy_endpoint",
        aws_conn_id=AWS_CONN_ID,
        poll_interval="{{ params.poll_interval }}",
        spec=EndpointSpec(
            endpoint_name="mlscale-digits",
            model_artifact=_xcom("compile", "compiled_artifact"),
            role_arn=ROLE_ARN,
            image_uri=INFERENCE_IMAGE,
            instance_type="ml.c5.large",
            instance_count=1,
            wait_seconds="{{ params.bake_seconds }}",
            sample_body=json.dumps(SAMPLE),
        ),
    )

    deploy_edge = GreengrassEdgeDeployOperator(
        task_id="deploy_edge",
        aws_conn_id=AWS_CONN_ID,
        component_name="com.mlscale.DigitsClassifier",
        compiled_artifact=_xcom("compile", "compiled_artifact"),
        app_source=str(INCLUDE / "edge" / "inference_app.py"),
        artifact_prefix=f"s3://{BUCKET}/mlscale/greengrass/",
        thing_group_name=EDGE_THING_GROUP,
        sample=json.dumps(SAMPLE),
        poll_interval="{{ params.poll_interval }}",
    )

    @task.branch
    def choose_targets(params=None, dag_run=None) -> list[str]:
        """Deploy to the endpoint, the edge fleet, both or neither (the deploy_target param).

        A backfill retrains on past intervals: its models are evaluated and registered, but
        deploying one would replace the current model with one trained on older data.
        """
        if dag_run.run_type == "backfill":
            print("backfill run: the model is registered, not deployed")
            return []
        return {"endpoint": ["deploy_endpoint"], "edge": ["deploy_edge"], "both": ["deploy_endpoint", "deploy_edge"],
                "none": []}[params["deploy_target"]]  # fmt: skip

    evaluate >> gate() >> compile_model >> choose_targets() >> [deploy_endpoint, deploy_edge]
    # Scratch file systems are billed while they exist: delete after training, even when it fails.
    train >> delete_fsx.as_teardown(setups=stage_fsx)
