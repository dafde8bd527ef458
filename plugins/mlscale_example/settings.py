"""The example project's settings: the `[mlscale_example]` section of Airflow's configuration.

Set them as any Airflow option: in airflow.cfg, or `AIRFLOW__MLSCALE_EXAMPLE__BUCKET=...`; read them with
`airflow config get-value mlscale_example bucket`. The defaults run the example DAGs on the local emulator.
"""

from __future__ import annotations

from mlscale.settings import (
    bucket_rule,
    json_object_rule,
    poll_interval_rule,
    read_option,
    role_arn_rule,
)

SECTION = "mlscale_example"
# Each option: (default, description).
OPTIONS: dict[str, tuple[str, str]] = {
    "aws_conn_id": (
        "aws_default",
        "The Airflow connection the example DAGs use (AWS, or the emulator's endpoint_url).",
    ),
    "bucket": ("mlscale-demo", "The S3 bucket for raw data, ETL output, shards, models and reports."),
    "role_arn": (
        "arn:aws:iam::123456789012:role/mlscale-sagemaker",
        "The SageMaker execution role the jobs, models and endpoints run as.",
    ),
    "glue_database": ("mlscale", "The Glue database of the raw table."),
    "training_image": (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
        "The training (and processing) container image; use your region's registry.",
    ),
    "processing_image": ("", "The processing container image; empty: the training image."),
    "inference_image": (
        "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.5.1-cpu-py311-ubuntu22.04-sagemaker",
        "The inference container image (Batch Transform and endpoints).",
    ),
    "subnet_id": ("subnet-0123456789abcdef0", "The VPC subnet of FSx for Lustre and FileSystemDataSource channels."),
    "security_group_id": ("sg-0123456789abcdef0", "The security group of FSx for Lustre and the training job."),
    "edge_thing_group": ("mlscale-edge-fleet", "The IoT thing group of the Greengrass core devices."),
    "arrivals_queue_url": (
        "https://sqs.us-east-1.amazonaws.com/123456789012/mlscale-raw-arrivals",
        "The SQS queue the bucket's S3 event notifications for new raw data go to; the "
        "pipeline's asset watcher reads it (the emulator accepts this URL as it is).",
    ),
    "batch_cluster": (
        '{"InstanceType": "c5.xlarge", "NodeVcpus": "1", "NodeMemoryMiB": "2048", "NodeGpus": "0", "MaxvCpus": "16"}',
        "training_backend=batch: the CloudFormation parameters of the deep-learning cluster "
        "(include/cloudformation/dl_cluster.yaml), JSON; each node's job asks for its NodeVcpus, "
        'NodeMemoryMiB and NodeGpus. On AWS e.g. {"InstanceType": "p4d.24xlarge", "NodeVcpus": '
        '"96", "NodeMemoryMiB": "1100000", "NodeGpus": "8", "EnableEfa": "true", '
        '"MaxvCpus": "384"}.',
    ),
    "training_pool": ("mlscale_training", "The Airflow pool that bounds concurrent training jobs (account quotas)."),
    "poll_interval": (
        "5",
        "The example pipeline's default `poll_interval` param: seconds between status checks of "
        "its jobs, endpoints and deployments. `mlscale airflow` sets 2: the emulator's jobs take seconds.",
    ),
}

RULES = {
    "bucket": bucket_rule,
    "role_arn": role_arn_rule,
    "poll_interval": poll_interval_rule,
    "batch_cluster": json_object_rule,
}


def setting(name: str) -> str:
    """An `[mlscale_example]` option's value, checked (mlscale.settings.SettingError names the rule)."""
    return read_option(SECTION, name, OPTIONS, RULES)
