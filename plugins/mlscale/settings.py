"""mlscale's settings: the `[mlscale]` section of Airflow's configuration, declared in the provider info.

Set them as any Airflow option: in airflow.cfg, or `AIRFLOW__MLSCALE__BUCKET=...`; read them with
`airflow config get-value mlscale bucket`. The defaults run the example DAG on the local emulator.
"""

from __future__ import annotations

# Each option: (default, description). The provider info turns this table into Airflow's config schema.
OPTIONS: dict[str, tuple[str, str]] = {
    "aws_conn_id": ("aws_default", "The Airflow connection the example DAGs use (AWS, or the emulator's endpoint_url)."),
    "bucket": ("mlscale-demo", "The S3 bucket for raw data, ETL output, shards, models and reports."),
    "role_arn": ("arn:aws:iam::123456789012:role/mlscale-sagemaker",
                 "The SageMaker execution role the jobs, models and endpoints run as."),
    "glue_database": ("mlscale", "The Glue database of the raw table."),
    "training_image": ("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311-ubuntu22.04"
                       "-sagemaker", "The training (and processing) container image; use your region's registry."),
    "processing_image": ("", "The processing container image; empty: the training image."),
    "inference_image": ("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311-ubuntu22.04"
                        "-sagemaker", "The inference container image (Batch Transform and endpoints)."),
    "subnet_id": ("subnet-0123456789abcdef0", "The VPC subnet of FSx for Lustre and FileSystemDataSource channels."),
    "security_group_id": ("sg-0123456789abcdef0", "The security group of FSx for Lustre and the training job."),
    "edge_thing_group": ("mlscale-edge-fleet", "The IoT thing group of the Greengrass core devices."),
    "arrivals_queue_url": ("https://sqs.us-east-1.amazonaws.com/123456789012/mlscale-raw-arrivals",
                           "The SQS queue the bucket's S3 event notifications for new raw data go to; the "
                           "pipeline's asset watcher reads it (the emulator accepts this URL as it is)."),
    "batch_cluster": ('{"InstanceType": "c5.xlarge", "NodeVcpus": "1", "NodeMemoryMiB": "2048", "NodeGpus": "0", '
                      '"MaxvCpus": "16"}',
                      "training_backend=batch: the CloudFormation parameters of the deep-learning cluster "
                      "(include/cloudformation/dl_cluster.yaml), JSON; each node's job asks for its NodeVcpus, "
                      "NodeMemoryMiB and NodeGpus. On AWS e.g. {\"InstanceType\": \"p4d.24xlarge\", \"NodeVcpus\": "
                      "\"96\", \"NodeMemoryMiB\": \"1100000\", \"NodeGpus\": \"8\", \"EnableEfa\": \"true\", "
                      "\"MaxvCpus\": \"384\"}."),
    "training_pool": ("mlscale_training", "The Airflow pool that bounds concurrent training jobs (account quotas)."),
    "first_event_delay": ("15", "Seconds a stage trigger holds its first event after it starts. Airflow 3.3 can fail a "
                          "resumed task whose trigger fired within seconds of its deferral (apache/airflow#72716); "
                          "jobs on AWS take minutes, so the hold rarely costs. `mlscale airflow` sets 0: its "
                          "scheduler carries the fix."),
    "poll_interval": ("5", "The example pipeline's default `poll_interval` param: seconds between status checks of "
                      "its jobs, endpoints and deployments. `mlscale airflow` sets 2: the emulator's jobs take seconds."),
    "cache_location": ("", "The s3:// prefix of the stage cache's entries (one JSON object per stage fingerprint); "
                       "empty: s3://<bucket>/mlscale/cache."),
}


def config_schema() -> dict:
    """The provider info's `config` entry."""
    return {"mlscale": {
        "description": "Settings of the mlscale example DAGs.",
        "options": {name: {"description": text, "version_added": "0.2.0", "type": "string", "example": None,
                           "default": default} for name, (default, text) in OPTIONS.items()},
    }}  # fmt: skip


def setting(name: str) -> str:
    """The option's value (Airflow's config, its AIRFLOW__MLSCALE__* variable, or the default)."""
    from airflow.configuration import conf

    return conf.get("mlscale", name, fallback=OPTIONS[name][0])
