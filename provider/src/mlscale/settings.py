"""mlscale's settings: the `[mlscale]` section of Airflow's configuration, declared in the provider info.

Set them as any Airflow option: in airflow.cfg, or `AIRFLOW__MLSCALE__BUCKET=...`; read them with
`airflow config get-value mlscale bucket`. The defaults run the example DAG on the local emulator.
"""

from __future__ import annotations

# Each option: (default, description). The provider info turns this table into Airflow's config schema.
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
    "first_event_delay": (
        "15",
        "Seconds a stage trigger holds its first event after it starts. Airflow 3.3 can fail a "
        "resumed task whose trigger fired within seconds of its deferral (apache/airflow#72716); "
        "jobs on AWS take minutes, so the hold rarely costs. `mlscale airflow` sets 0: its "
        "scheduler carries the fix.",
    ),
    "poll_interval": (
        "5",
        "The example pipeline's default `poll_interval` param: seconds between status checks of "
        "its jobs, endpoints and deployments. `mlscale airflow` sets 2: the emulator's jobs take seconds.",
    ),
    "cache_location": (
        "",
        "The s3:// prefix of the stage cache's entries (one JSON object per stage fingerprint); "
        "empty: s3://<bucket>/mlscale/cache.",
    ),
}


def config_schema() -> dict:
    """The provider info's `config` entry."""
    return {
        "mlscale": {
            "description": "Settings of the mlscale example DAGs.",
            "options": {
                name: {
                    "description": text,
                    "version_added": "0.2.0",
                    "type": "string",
                    "example": None,
                    "default": default,
                }
                for name, (default, text) in OPTIONS.items()
            },
        }
    }


class SettingError(ValueError):
    """An `[mlscale]` option's value breaks its rule; the message names the option and the rule."""


def setting(name: str) -> str:
    """The option's value (Airflow's config, its AIRFLOW__MLSCALE__* variable, or the default), checked."""
    from airflow.configuration import conf

    value = conf.get("mlscale", name, fallback=OPTIONS[name][0])
    rule = RULES.get(name)
    if rule is not None and (broken := rule(value)):
        raise SettingError(
            f"[mlscale] {name} = {value!r}: {broken} (set it in airflow.cfg or AIRFLOW__MLSCALE__{name.upper()})"
        )
    return value


def _bucket(value: str) -> str | None:
    from mlscale.specs.rules import valid_bucket

    return (
        None
        if valid_bucket(value)
        else "must be an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-', no '..', not an IP address"
    )


def _role_arn(value: str) -> str | None:
    from mlscale.specs.rules import ROLE_ARN

    return None if ROLE_ARN.match(value) else "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)"


def _seconds(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return "must be a number of seconds"
    return None if 0 <= number < float("inf") else "must be a number of seconds, 0 or more"


def _poll_interval(value: str) -> str | None:
    return (
        None
        if value.strip().isdigit() and 1 <= int(value) <= 300
        else "must be a whole number of seconds from 1 to 300"
    )


def _json_object(value: str) -> str | None:
    import json

    try:
        parsed = json.loads(value)
    except ValueError as error:
        return f"must be a JSON object: {error}"
    return None if isinstance(parsed, dict) else "must be a JSON object"


def _optional_s3_uri(value: str) -> str | None:
    if not value:
        return None
    return (
        None
        if value.startswith("s3://") and not _bucket(value[5:].split("/", 1)[0])
        else "must be empty or an s3://bucket/prefix URI"
    )


RULES = {
    "bucket": _bucket,
    "role_arn": _role_arn,
    "first_event_delay": _seconds,
    "poll_interval": _poll_interval,
    "batch_cluster": _json_object,
    "cache_location": _optional_s3_uri,
}
