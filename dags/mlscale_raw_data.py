"""The producer: lands a day of raw records in S3 and announces it; the pipeline starts on the announcement.

It stands in for the upstream systems that write raw data (mlscale_example.datasets.raw_digits generates it).
Each day is a partition `dt=YYYY-MM-DD/` of the Glue table `raw_digits`, completed by a `_SUCCESS` marker. A run
that wrote new days puts an arrival notice under `mlscale/raw/_arrivals/`; the bucket sends its S3 event to the SQS
queue that the pipeline's asset watcher reads, so one producer run starts one pipeline run. Backfills load history
without notices: retraining on the past is the pipeline's own backfill.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, CronTriggerTimetable, task

from mlscale.params import form_param
from mlscale_example.settings import setting

AWS_CONN_ID = setting("aws_conn_id")
BUCKET = setting("bucket")

with DAG(
    dag_id="mlscale_raw_data",
    description="Raw digits, one partition a day, announced to the pipeline by S3 event notifications",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    schedule=CronTriggerTimetable("@daily", timezone="UTC"),  # a run at midnight loads the day that just ended
    catchup=False,
    tags=["mlscale", "producer"],
    params={
        "records_per_day": form_param(
            1_000, type="integer", minimum=100, maximum=1_000_000, description="Records written per day"
        ),
        "days": form_param(
            7,
            type="integer",
            minimum=1,
            maximum=366,
            description="Days up to the run's day whose missing partitions this run writes "
            "(a first run loads a week: what the pipeline trains on)",
        ),
        "announce": form_param(
            True, type="boolean", description="Announce new days to the pipeline (backfill runs never do)"
        ),
    },
) as dag:

    @task
    def write_partitions(params=None, logical_date=None, dag_run=None) -> dict:
        """Write the missing days, each completed by its `_SUCCESS`; announce them unless this is a backfill."""
        from mlscale_example.pipeline.steps import produce_raw_days

        return produce_raw_days(AWS_CONN_ID, BUCKET, setting("glue_database"), logical_date, dag_run, params)

    write_partitions()
