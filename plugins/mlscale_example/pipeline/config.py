"""The example pipeline's settings, assets and training constants, read once when the DAG file is parsed.

Settings come from the [mlscale_example] section of Airflow's config (AIRFLOW__MLSCALE_EXAMPLE__BUCKET=...;
mlscale_example.settings).
"""

from __future__ import annotations

import json
from pathlib import Path

from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger
from airflow.sdk import Asset, AssetWatcher

from mlscale_example.pipeline.raw_data import arrivals_prefix
from mlscale_example.settings import setting

AWS_CONN_ID = setting("aws_conn_id")
BUCKET = setting("bucket")
ROLE_ARN = setting("role_arn")
DATABASE = setting("glue_database")
TRAINING_IMAGE = setting("training_image")  # AWS's PyTorch containers (CPU); use your region's registry on AWS
INFERENCE_IMAGE = setting("inference_image")
# FSx for Lustre and FileSystemDataSource channels live in a VPC subnet (one Availability Zone).
SUBNET_ID, SECURITY_GROUP_ID = setting("subnet_id"), setting("security_group_id")
# Training jobs count against account quotas (instances per type): this pool bounds how many run at once,
# backfills included. `mlscale airflow` and `mlscale demo` create it (MLSCALE_TRAINING_POOL_SLOTS slots).
TRAINING_POOL = setting("training_pool")
# the project's include/ folder: the job scripts, the SQL, the cluster template
INCLUDE = Path(__file__).resolve().parents[3] / "include"
# New raw data: the producer's arrival notices raise S3 events to this queue; the watcher turns each batch
# of messages into an asset event, which starts a run (long polls of 10 s: an event is seen within seconds).
RAW_ARRIVALS = Asset(
    name="mlscale_raw_arrivals",
    uri=arrivals_prefix(BUCKET),
    watchers=[
        AssetWatcher(
            name="mlscale_raw_arrivals_queue",
            trigger=MessageQueueTrigger(
                scheme="sqs",
                sqs_queue=setting("arrivals_queue_url"),
                aws_conn_id=AWS_CONN_ID,
                wait_time_seconds=10,
                waiter_delay=1,
            ),
        )
    ],
)
# Fresh training data: downstream DAGs can schedule on it (schedule=[TRAINING_DATA]).
TRAINING_DATA = Asset(name="mlscale_training_data", uri=f"s3://{BUCKET}/mlscale/etl/")
LOADER_WORKERS = 0  # loading 8x8 images in the trainer: 3.5% of training waiting for data, 29% with one worker
OUT = "/opt/ml/processing/output"  # the shard job's local output directories
# training_backend=batch: the deep-learning cluster as code, one stack per run, created and deleted by the run
CLUSTER = json.loads(setting("batch_cluster"))
CLUSTER_TEMPLATE = (INCLUDE / "cloudformation" / "dl_cluster.yaml").read_text()
METRICS = {
    "train:loss": r"train_loss=([0-9.]+)",
    "test:loss": r"test_loss=([0-9.]+)",
    "test:accuracy": r"test_accuracy=([0-9.]+)",
    "data:wait_fraction": r"data_wait_fraction=([0-9.]+)",
}
HYPERPARAMETERS = {"epochs": "{{ params.epochs }}", "batch-size": 64, "lr": 0.003, "loader-workers": LOADER_WORKERS}
POLL = {"aws_conn_id": AWS_CONN_ID, "poll_interval": "{{ params.poll_interval }}"}
