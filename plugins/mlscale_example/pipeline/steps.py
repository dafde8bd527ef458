"""The example DAGs' Python tasks: produce raw data, plan the shards and storage, pick channels and targets."""

from __future__ import annotations

from typing import Any


def produce_raw_days(aws_conn_id: str, bucket: str, database: str, logical_date, dag_run, params: dict) -> dict:
    """The producer DAG's run: write the missing partitions of the `days` up to the run's day, then announce the
    new ones (one arrival notice, which starts one pipeline run) unless announcing is off or this is a backfill."""
    from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from mlscale_example.pipeline import raw_data

    s3 = S3Hook(aws_conn_id=aws_conn_id)
    if not s3.check_for_bucket(bucket):
        s3.create_bucket(bucket)
    days = raw_data.days_ending(raw_data.producer_day(logical_date, dag_run.run_after), params["days"])
    glue = AwsBaseHook(aws_conn_id=aws_conn_id, client_type="glue").get_conn()
    written = raw_data.write_partitions(s3.get_conn(), glue, bucket, database, days, params["records_per_day"])
    notice = None
    if written and params["announce"] and dag_run.run_type != "backfill":  # DagRunType is a str enum
        notice = raw_data.announce(s3.get_conn(), raw_data.arrivals_prefix(bucket), written, dag_run.run_id)
    print(f"days {days[0]}..{days[-1]}: wrote {', '.join(written) or 'nothing new'}; arrival notice: {notice}")
    return {"days": [d.isoformat() for d in days], "written": written, "notice": notice}


def plan_data(aws_conn_id: str, partition_prefixes: list[str], params: dict, loader_workers: int) -> dict[str, Any]:
    """The example pipeline's plan_data: measure the window's raw partitions; the data advisor says which engine
    fits (in words), the run's `etl_engine` param picks the one that runs, and the Spark path's shard count
    (Spark shards in the same job, so the count is planned from the raw data; the Athena path plans it from
    the ETL output, in plan_shards)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from mlscale.advisors.data_engine import DataNeeds, advise_engine
    from mlscale.advisors.sharding import plan_shards
    from mlscale.aws.catalog import parquet_stats
    from mlscale.aws.clients import shared_hook

    s3 = shared_hook(S3Hook, aws_conn_id=aws_conn_id).get_conn()
    stats = [parquet_stats(s3, prefix) for prefix in partition_prefixes]
    raw = {key: sum(s[key] for s in stats) for key in ("objects", "bytes", "rows")}
    if raw["rows"] == 0:
        raise ValueError("plan_data: the data interval's partitions hold no records; nothing to train on")
    advice = advise_engine(DataNeeds(raw_bytes=raw["bytes"], transform="sql"))
    engine = params["etl_engine"]
    shards = plan_shards(raw["bytes"], raw["rows"], params["instance_count"], loader_workers).to_dict()["shards"]
    note = "" if engine == advice.engine else f" (the advisor would choose {advice.engine})"
    print(f"raw data: {raw}; engine: {engine}{note}; advice: {advice.reason}")
    return {
        "raw": raw,
        "advice": advice.to_dict(),
        "engine": engine,
        "athena": engine == "athena",
        "spark": engine == "spark",
        "skip_reason": f"etl_engine={engine}",
        "spark_shard_count": shards,
        "raw_inputs": ",".join(partition_prefixes),  # the Spark job's --input
    }


def etl_output(etl: dict, spark: dict) -> dict[str, Any]:
    """Where the engine that ran wrote the window's clean records (the other stage's result: `enabled` false)."""
    if spark.get("enabled", True):
        return {"engine": "spark", "data_prefix": spark["etl_uri"], "job": spark["job_run_id"]}
    return {"engine": "athena", "data_prefix": etl["data_prefix"], "job": etl["query_execution_id"]}


def shard_output(shard: dict, spark: dict) -> dict[str, Any]:
    """Where the engine that ran wrote the shards, the held-out test shard and its CSV for Batch Transform."""
    chosen = spark if spark.get("enabled", True) else shard
    return {key: chosen[key] for key in ("shards_uri", "test_uri", "features_uri", "labels_uri")}


def plan_from_etl_output(aws_conn_id: str, etl_prefix: str, params: dict, loader_workers: int) -> dict[str, Any]:
    """The example pipeline's plan_shards: measure the ETL output (Parquet footers), then plan_training_data."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    from mlscale.aws.catalog import parquet_stats
    from mlscale.aws.clients import shared_hook

    plan = plan_training_data(
        parquet_stats(shared_hook(S3Hook, aws_conn_id=aws_conn_id).get_conn(), etl_prefix), params, loader_workers
    )
    print(f"ETL output: {plan['etl']}; storage: {plan['storage']['reason']} FSx: {plan['fsx_reason']}")
    return plan


def stack_outputs(aws_conn_id: str, stack_name: str) -> dict[str, str]:
    """A CloudFormation stack's Outputs by key (the cluster's job queue and job definition)."""
    from airflow.providers.amazon.aws.hooks.cloud_formation import CloudFormationHook

    stack = CloudFormationHook(aws_conn_id=aws_conn_id).get_conn().describe_stacks(StackName=stack_name)
    return {o["OutputKey"]: o["OutputValue"] for o in stack["Stacks"][0].get("Outputs", [])}


def plan_training_data(stats: dict, params: dict, loader_workers: int) -> dict[str, Any]:
    """The storage advisor's choice and the shard plan for the ETL output's `stats` (rows, bytes, objects)."""
    from mlscale.advisors.sharding import plan_shards
    from mlscale.advisors.storage import StorageNeeds, advise_storage

    if stats["rows"] == 0:
        raise ValueError("etl: the data interval holds no valid records; nothing to train on")
    choice = advise_storage(
        StorageNeeds(
            dataset_bytes=stats["bytes"],
            object_count=stats["objects"],
            epochs=params["epochs"],
            instances=params["instance_count"],
            gpus_per_instance=params["gpus_per_instance"],
            samples_per_second_per_gpu=params["samples_per_second"],
            bytes_per_sample=stats["bytes"] / stats["rows"],
        )
    )
    plan = plan_shards(stats["bytes"], stats["rows"], params["instance_count"], loader_workers)
    use_fsx = params["storage"] == "fsx_lustre" or (params["storage"] == "auto" and choice.storage == "fsx_lustre")
    return {
        "etl": stats,
        "storage": choice.to_dict(),
        "shards": plan.to_dict(),
        "shard_count": plan.to_dict()["shards"],
        "input_mode": choice.input_mode or "File",
        "fsx_enabled": use_fsx,
        "fsx_deployment_type": choice.fsx_deployment_type or "SCRATCH_2",
        "fsx_storage_capacity_gib": choice.fsx_storage_capacity_gib or 1200,
        "fsx_throughput": choice.fsx_throughput_mb_per_s_per_tib
        if choice.fsx_deployment_type == "PERSISTENT_2"
        else None,
        "fsx_reason": f"storage={params['storage']}; the advisor: {choice.reason}",
    }


def training_channels(
    shards_uri: str, test_uri: str, fsx: dict | None, subnet_id: str, security_group_id: str
) -> dict[str, Any]:
    """Shards from FSx (a FileSystemDataSource channel, in the VPC) when staged, else from S3."""
    if not fsx or not fsx.get("file_system_id"):
        return {"inputs": {"train": shards_uri, "test": test_uri}, "subnets": [], "security_group_ids": []}
    train = {"file_system_id": fsx["file_system_id"], "directory_path": fsx["directory_path"]}
    return {
        "inputs": {"train": train, "test": test_uri},
        "subnets": [subnet_id],
        "security_group_ids": [security_group_id],
    }


DEPLOY_TARGETS = {
    "endpoint": ["deploy_endpoint"],
    "edge": ["deploy_edge"],
    "both": ["deploy_endpoint", "deploy_edge"],
    "none": [],
}


def deploy_tasks(run_type: str, deploy_target: str) -> list[str]:
    """The deploy tasks a run goes on to. A backfill retrains on past intervals: its models are evaluated
    and registered, but deploying one would replace the current model with one trained on older data."""
    if run_type == "backfill":  # DagRunType.BACKFILL_JOB is a str enum
        return []
    return DEPLOY_TARGETS[deploy_target]
