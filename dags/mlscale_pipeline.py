"""mlscale's example pipeline, after the AWS whitepaper *Power Machine Learning at Scale*.

    plan_run -> wait_for_data (the week's partitions) -> plan_data (data advisor; the etl_engine param)
        -> etl (Athena UNLOAD) or spark_etl (one Glue Spark job: ETL and shards) -> etl_output
        -> quality (Athena aggregates, plots, gate)
        -> plan_shards (storage advisor) -> shard (SageMaker Processing; not needed after spark_etl) -> shards
        -> stage_fsx (FSx for Lustre, only when the advisor says so) -> choose_backend
        -> train (SageMaker, DDP) -> diagnose (CloudWatch utilisation -> bottleneck and the next configuration)
           or create_cluster (CloudFormation) -> train_on_batch (AWS Batch multi-node, DDP); delete_cluster
        -> trained -> evaluate (Batch Transform, metrics, model registry) -> gate
        -> approve (gate_mode=manual: a person in the Airflow UI) -> compile (Neo)
        -> choose_targets -> deploy_endpoint and/or deploy_edge (Greengrass v2); delete_fsx (teardown)

Runs against AWS or the local emulator: only the `aws_default` connection
differs (`endpoint_url` in its extra points it at the emulator). It starts when
new raw data arrives (the producer DAG mlscale_raw_data announces it; S3 sends
the event to an SQS queue that an asset watcher reads) and weekly; each run
trains on a week of data, so backfills retrain on past weeks. Settings
come from the `[mlscale_example]` section of Airflow's config; the steps that are not
an AWS stage are tested functions in mlscale_example.pipeline. Data flows through
XComArgs (`train.output["model_artifact"]`); the order is stated once, at the end.
"""

from __future__ import annotations

import json

import pendulum
from airflow.providers.amazon.aws.operators.cloud_formation import (
    CloudFormationCreateStackOperator,
    CloudFormationDeleteStackOperator,
)
from airflow.providers.amazon.aws.sensors.cloud_formation import CloudFormationCreateStackSensor
from airflow.providers.amazon.aws.sensors.s3 import S3KeySensor
from airflow.sdk import DAG, AssetOrTimeSchedule, CronTriggerTimetable, chain, task

from mlscale.operators import (
    AthenaEtlOperator,
    BatchMultiNodeTrainingOperator,
    DataQualityOperator,
    FSxDeleteFileSystemOperator,
    FSxLustreStageOperator,
    GlueSparkJobOperator,
    GreengrassEdgeDeployOperator,
    ModelApprovalOperator,
    SageMakerBatchEvaluationOperator,
    SageMakerEndpointDeployOperator,
    SageMakerNeoCompilationOperator,
    SageMakerProcessingScriptOperator,
    SageMakerScriptTrainingOperator,
    TrainingDiagnosisOperator,
)
from mlscale.specs import (
    AthenaEtlSpec,
    BatchTrainingSpec,
    CompilationSpec,
    DiagnosisSpec,
    EdgeDeploymentSpec,
    EndpointSpec,
    EvaluationSpec,
    FSxLustreSpec,
    GlueSparkSpec,
    ProcessingInput,
    ProcessingOutput,
    ProcessingSpec,
    QualitySpec,
    TrainingSpec,
)
from mlscale_example.datasets.digits import SAMPLE_ZERO
from mlscale_example.pipeline.config import (
    AWS_CONN_ID,
    BUCKET,
    CLUSTER,
    CLUSTER_TEMPLATE,
    DATABASE,
    HYPERPARAMETERS,
    INCLUDE,
    INFERENCE_IMAGE,
    LOADER_WORKERS,
    METRICS,
    OUT,
    POLL,
    RAW_ARRIVALS,
    ROLE_ARN,
    SECURITY_GROUP_ID,
    SUBNET_ID,
    TRAINING_DATA,
    TRAINING_IMAGE,
    TRAINING_POOL,
)
from mlscale_example.pipeline.form import pipeline_form, stage_cache
from mlscale_example.settings import setting

with DAG(
    dag_id="mlscale_pipeline",
    description="ETL -> shards -> distributed training, after the AWS whitepaper Power Machine Learning at Scale",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule=AssetOrTimeSchedule(timetable=CronTriggerTimetable("@weekly", timezone="UTC"), assets=RAW_ARRIVALS),
    catchup=False,
    max_active_runs=2,
    template_searchpath=[str(INCLUDE)],
    tags=["mlscale", "sagemaker"],
    params=pipeline_form(DATABASE),
) as dag:

    @task(multiple_outputs=True)
    def plan_run(
        params=None, data_interval_start=None, data_interval_end=None, dag_run=None, triggering_asset_events=None
    ):
        """Check the run's params; the week it trains on (ending with the newest arrived day when new data
        started it), the `_SUCCESS` markers of that week, and every prefix the run writes."""
        from mlscale_example.pipeline.layout import plan_run_window

        return plan_run_window(BUCKET, params, data_interval_start, data_interval_end, dag_run, triggering_asset_events)

    layout = plan_run()

    # Scheduled and backfill runs wait for their week's partitions (deferred: no worker slot while waiting).
    wait_for_data = S3KeySensor(
        task_id="wait_for_data",
        aws_conn_id=AWS_CONN_ID,
        bucket_key=layout["partition_markers"],
        deferrable=True,
        poke_interval=60,
        timeout=12 * 3600,
    )

    @task(multiple_outputs=True)
    def plan_data(partition_prefixes: list, params=None) -> dict:
        """The data advisor on the window's raw partitions; the etl_engine param picks Athena or Spark."""
        from mlscale_example.pipeline.steps import plan_data

        return plan_data(AWS_CONN_ID, partition_prefixes, params, LOADER_WORKERS)

    data_plan = plan_data(layout["partition_prefixes"])

    # Downstream stages read where a stage says its output is, not the layout: a reused job's run made it.
    # One of etl and spark_etl runs; the other is not needed (it succeeds at once, saying why).
    etl = AthenaEtlOperator(
        task_id="etl",
        enabled=data_plan["athena"],
        skip_reason=data_plan["skip_reason"],
        spec=AthenaEtlSpec(
            query="sql/etl_digits.sql",
            database="{{ params.database }}",
            data_prefix=layout["etl_prefix"],
            output_location=f"s3://{BUCKET}/mlscale/athena-results/",
            inputs={"raw": layout["partition_prefixes"]},
        ),
        cache=stage_cache(),
        **POLL,
    )

    spark_etl = GlueSparkJobOperator(
        task_id="spark_etl",
        enabled=data_plan["spark"],
        skip_reason=data_plan["skip_reason"],
        spec=GlueSparkSpec(
            job_name="mlscale-etl-shard",
            script=str(INCLUDE / "spark" / "etl_shard.py"),
            extra_py_files=[str(INCLUDE / "processing" / "shard.py")],  # the shard record format
            role_arn=ROLE_ARN,
            code_location=f"s3://{BUCKET}/mlscale/code/spark",
            arguments={
                "--input": data_plan["raw_inputs"],
                "--etl-output": layout["etl_prefix"],
                "--shards-output": layout["shards_uri"],
                "--test-output": layout["test_uri"],
                "--eval-output": layout["eval_uri"],
                "--shards": data_plan["spark_shard_count"],
                "--seed": layout["seed"],
                "--test-fraction": "0.1",
            },
            inputs={"raw": layout["partition_prefixes"]},
            outputs={
                "etl": layout["etl_prefix"],
                "shards": layout["shards_uri"],
                "test": layout["test_uri"],
                "features": layout["eval_features_uri"],
                "labels": layout["eval_labels_uri"],
            },
        ),
        cache=stage_cache(),
        **POLL,
    )

    @task(multiple_outputs=True, outlets=[TRAINING_DATA])
    def etl_output(athena: dict, spark: dict) -> dict:
        """The clean records of whichever engine ran (what the training data asset announces)."""
        from mlscale_example.pipeline.steps import etl_output

        return etl_output(athena, spark)

    etl_data = etl_output(etl.output, spark_etl.output)["data_prefix"]

    quality = DataQualityOperator(
        task_id="quality",
        spec=QualitySpec(
            database="{{ params.database }}",
            table="raw_digits",
            partition_start=layout["window_start"],
            partition_end=layout["window_end"],
            data_prefix=etl_data,
            report_prefix=f"s3://{BUCKET}/mlscale/quality",
            output_location=f"s3://{BUCKET}/mlscale/athena-results/",
            thresholds="{{ params.quality }}",
        ),
        **POLL,
    )

    @task(multiple_outputs=True)
    def plan_shards(etl_prefix: str, params=None) -> dict:
        """Measure the ETL output; the storage advisor picks the input mode, FSx or not, and the shard count."""
        from mlscale_example.pipeline.steps import plan_from_etl_output

        return plan_from_etl_output(AWS_CONN_ID, etl_prefix, params, LOADER_WORKERS)

    plan = plan_shards(etl_data)

    shard = SageMakerProcessingScriptOperator(
        task_id="shard",
        enabled=data_plan["athena"],
        skip_reason=data_plan["skip_reason"],
        spec=ProcessingSpec(
            script=str(INCLUDE / "processing" / "shard.py"),
            role_arn=ROLE_ARN,
            image_uri=setting("processing_image") or TRAINING_IMAGE,
            code_location=f"s3://{BUCKET}/mlscale/code/processing",
            arguments=["--shards", plan["shard_count"], "--seed", layout["seed"], "--test-fraction", "0.1"],
            inputs={"data": ProcessingInput(etl_data, "/opt/ml/processing/input/data")},
            outputs={
                "shards": ProcessingOutput(f"{OUT}/shards", layout["shards_uri"]),
                "test": ProcessingOutput(f"{OUT}/test", layout["test_uri"]),
                # the held-out set for Batch Transform: shard.py writes its --eval-dir's features/, labels/
                "features": ProcessingOutput(f"{OUT}/eval/features", layout["eval_features_uri"]),
                "labels": ProcessingOutput(f"{OUT}/eval/labels", layout["eval_labels_uri"]),
            },
            instance_type="ml.m5.xlarge",
            max_runtime_seconds=3600,
        ),
        cache=stage_cache(),
        **POLL,
    )

    @task(multiple_outputs=True)
    def shards(processing: dict, spark: dict) -> dict:
        """The shards, test shard and evaluation CSV of whichever engine wrote them."""
        from mlscale_example.pipeline.steps import shard_output

        return shard_output(processing, spark)

    sharded = shards(shard.output, spark_etl.output)

    stage_fsx = FSxLustreStageOperator(
        task_id="stage_fsx",
        enabled=plan["fsx_enabled"],
        skip_reason=plan["fsx_reason"],
        spec=FSxLustreSpec(
            data_repository_path=sharded["shards_uri"],
            deployment_type=plan["fsx_deployment_type"],
            storage_capacity_gib=plan["fsx_storage_capacity_gib"],
            per_unit_storage_throughput=plan["fsx_throughput"],
            subnet_id=SUBNET_ID,
            security_group_ids=[SECURITY_GROUP_ID],
            file_system_path="/shards",
        ),
        **POLL,
    )

    @task(multiple_outputs=True)
    def training_inputs(shards_uri: str, test_uri: str, fsx: dict) -> dict:
        """Shards from FSx (a FileSystemDataSource channel, in the VPC) when staged, else from S3."""
        from mlscale_example.pipeline.steps import training_channels

        return training_channels(shards_uri, test_uri, fsx, SUBNET_ID, SECURITY_GROUP_ID)

    channels = training_inputs(sharded["shards_uri"], sharded["test_uri"], stage_fsx.output)

    train = SageMakerScriptTrainingOperator(
        task_id="train",
        pool=TRAINING_POOL,
        spec=TrainingSpec(
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            role_arn=ROLE_ARN,
            image_uri=TRAINING_IMAGE,
            output_path=f"s3://{BUCKET}/mlscale/models",
            instance_type="{{ params.instance_type }}",
            instance_count="{{ params.instance_count }}",
            distribution="torch_distributed",
            hyperparameters=HYPERPARAMETERS,
            inputs=channels["inputs"],
            subnets=channels["subnets"],
            security_group_ids=channels["security_group_ids"],
            input_mode=plan["input_mode"],
            metric_definitions=METRICS,
            max_runtime_seconds=3600,
            tags={"project": "mlscale"},
        ),
        cache=stage_cache(),
        **POLL,
    )

    # -- the EC2 backend: a cluster stack of the run's own, one Batch multi-node job, the stack deleted after --

    @task.branch
    def choose_backend(params=None) -> str:
        return "train" if params["training_backend"] == "sagemaker" else "create_cluster"

    backend = choose_backend()

    # No retries: a retry would find its own stack and fail (AlreadyExists); the teardown deletes it either way.
    create_cluster = CloudFormationCreateStackOperator(
        task_id="create_cluster",
        aws_conn_id=AWS_CONN_ID,
        stack_name=layout["cluster_stack"],
        retries=0,
        cloudformation_parameters={
            "TemplateBody": CLUSTER_TEMPLATE,
            "Capabilities": ["CAPABILITY_IAM"],
            "Parameters": [
                {"ParameterKey": key, "ParameterValue": value}
                for key, value in {**CLUSTER, "DataBucket": BUCKET}.items()
            ],
            "Tags": [{"Key": "project", "Value": "mlscale"}],
        },
    )
    wait_for_cluster = CloudFormationCreateStackSensor(
        task_id="wait_for_cluster",
        aws_conn_id=AWS_CONN_ID,
        stack_name=layout["cluster_stack"],
        poke_interval=5,
        timeout=3600,
    )

    @task(multiple_outputs=True)
    def cluster_outputs(stack_name: str) -> dict:
        """The stack's Outputs: the job queue and job definition the training job runs on."""
        from mlscale_example.pipeline.steps import stack_outputs

        return stack_outputs(AWS_CONN_ID, stack_name)

    cluster = cluster_outputs(layout["cluster_stack"])

    train_on_batch = BatchMultiNodeTrainingOperator(
        task_id="train_on_batch",
        pool=TRAINING_POOL,
        spec=BatchTrainingSpec(
            job_queue=cluster["JobQueueArn"],
            job_definition=cluster["JobDefinitionArn"],
            entry_point="train.py",
            source_dir=str(INCLUDE / "training"),
            output_path=f"s3://{BUCKET}/mlscale/models",
            node_count="{{ params.instance_count }}",
            vcpus=int(CLUSTER.get("NodeVcpus", 1)),
            memory_mib=int(CLUSTER.get("NodeMemoryMiB", 2048)),
            gpus=int(CLUSTER.get("NodeGpus", 0)),
            hyperparameters=HYPERPARAMETERS,
            inputs={"train": sharded["shards_uri"], "test": sharded["test_uri"]},  # S3, not FSx
            metric_definitions=METRICS,
            timeout_seconds=3600,
            tags={"project": "mlscale"},
        ),
        cache=stage_cache(),
        **POLL,
    )
    # A cluster is billed while its instances run: delete the stack after training, even when it fails.
    delete_cluster = CloudFormationDeleteStackOperator(
        task_id="delete_cluster", aws_conn_id=AWS_CONN_ID, stack_name=layout["cluster_stack"]
    )

    @task(multiple_outputs=True, trigger_rule="none_failed_min_one_success")
    def trained(sagemaker: dict | None, batch: dict | None) -> dict:
        """The model of whichever backend trained it (a skipped task's XCom is None)."""
        return {**(sagemaker or batch), "backend": "sagemaker" if sagemaker else "batch"}

    model = trained(train.output, train_on_batch.output)

    # Scratch file systems are billed while they exist: delete after training, even when it fails.
    delete_fsx = FSxDeleteFileSystemOperator(
        task_id="delete_fsx", aws_conn_id=AWS_CONN_ID, file_system_id=stage_fsx.output["file_system_id"]
    )

    diagnose = TrainingDiagnosisOperator(
        task_id="diagnose",
        aws_conn_id=AWS_CONN_ID,
        spec=DiagnosisSpec(
            job_name=train.output["job_name"], loader_workers=LOADER_WORKERS, period="{{ params.metrics_period }}"
        ),
    )

    evaluate = SageMakerBatchEvaluationOperator(
        task_id="evaluate",
        spec=EvaluationSpec(
            model_artifact=model["model_artifact"],
            role_arn=ROLE_ARN,
            image_uri=INFERENCE_IMAGE,
            features_uri=sharded["features_uri"],
            labels_uri=sharded["labels_uri"],
            output_uri=layout["evaluation_uri"],
            model_package_group="mlscale-digits",
            min_value="{{ params.min_accuracy }}",
            champion_tolerance="{{ params.champion_tolerance }}",
            manual_approval="{{ params.gate_mode == 'manual' }}",
        ),
        cache=stage_cache(),
        **POLL,
    )

    @task.short_circuit
    def gate(decision: str, model_package_arn: str, reasons: list) -> bool:
        """A Rejected model stops here: everything downstream (deployment) is skipped. A model waiting for a
        person (gate_mode=manual) goes on to `approve`."""
        print(f"model package {model_package_arn}: {decision}; " + "; ".join(reasons))
        return decision in ("Approved", "PendingManualApproval")

    approve = ModelApprovalOperator(
        task_id="approve",
        aws_conn_id=AWS_CONN_ID,
        model_package_arn=evaluate.output["model_package_arn"],
        evaluation=evaluate.output,
        response_timeout_minutes="{{ params.approval_minutes }}",
    )

    compile_model = SageMakerNeoCompilationOperator(
        task_id="compile",
        spec=CompilationSpec(
            model_artifact=model["model_artifact"],
            role_arn=ROLE_ARN,
            output_uri=layout["compiled_uri"],
            input_shapes={"input0": [1, 64]},  # one flattened 8x8 image, as the endpoint receives it
            target_device="{{ params.target_device }}",
            model_package_arn=evaluate.output["model_package_arn"],  # lineage: the package it compiles
        ),
        cache=stage_cache(),
        **POLL,
    )

    @task.branch
    def choose_targets(params=None, dag_run=None) -> list[str]:
        """Deploy to the endpoint, the edge fleet, both or neither (the deploy_target param); backfills never."""
        from mlscale_example.pipeline.steps import deploy_tasks

        return deploy_tasks(dag_run.run_type, params["deploy_target"])

    deploy_endpoint = SageMakerEndpointDeployOperator(
        task_id="deploy_endpoint",
        spec=EndpointSpec(
            endpoint_name="mlscale-digits",
            model_artifact=compile_model.output["compiled_artifact"],
            role_arn=ROLE_ARN,
            image_uri=INFERENCE_IMAGE,
            instance_type="ml.c5.large",
            instance_count=1,
            wait_seconds="{{ params.bake_seconds }}",
            sample_body=json.dumps(SAMPLE_ZERO),
            model_version=layout["model_version"],  # two runs at once: the older model is skipped as superseded
        ),
        **POLL,
    )

    deploy_edge = GreengrassEdgeDeployOperator(
        task_id="deploy_edge",
        spec=EdgeDeploymentSpec(
            component_name="com.mlscale.DigitsClassifier",
            compiled_artifact=compile_model.output["compiled_artifact"],
            app_source=str(INCLUDE / "edge" / "inference_app.py"),
            artifact_prefix=f"s3://{BUCKET}/mlscale/greengrass/",
            thing_group_name=setting("edge_thing_group"),
            sample=json.dumps(SAMPLE_ZERO),
            model_version=layout["model_version"],
        ),
        **POLL,
    )

    verdict = gate(evaluate.output["decision"], evaluate.output["model_package_arn"], evaluate.output["reasons"])
    chain(layout, wait_for_data, data_plan, [etl, spark_etl], etl_data, quality, plan, shard, sharded, stage_fsx)
    chain(stage_fsx, channels, backend, [train, create_cluster])
    chain(create_cluster, wait_for_cluster, cluster, train_on_batch)
    model >> evaluate
    train >> diagnose
    chain(verdict, approve, compile_model, choose_targets(), [deploy_endpoint, deploy_edge])
    [train, train_on_batch] >> delete_fsx.as_teardown(setups=stage_fsx)
    train_on_batch >> delete_cluster.as_teardown(setups=create_cluster)
