"""The raw data's contract between the producer DAG and the pipeline: daily partitions, their `_SUCCESS`
markers, and the arrival notices whose S3 events start the pipeline.

    mlscale/raw/digits/dt=YYYY-MM-DD/part-00000.parquet      one day's records (the Glue table's location)
    mlscale/raw/_markers/dt=YYYY-MM-DD/_SUCCESS              written last: the day is complete
    mlscale/raw/_arrivals/dt=YYYY-MM-DD/<run>.json           one per producer run that wrote new days

Markers and notices live outside the table's location, since Athena reads every object under it
(https://docs.aws.amazon.com/athena/latest/ug/tables-location-format.html). S3 event notifications filter on
the notices' prefix, so a history load (a backfill of the producer, which writes no notice) does not start one
pipeline run per day.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

RAW_TABLE = "raw_digits"
RAW_SCHEMA = {"record_id": "string", "label": "bigint", "pixels": "binary"}
MARKER = "_SUCCESS"
NOTIFICATION_ID = "mlscale-raw-arrivals"


def raw_prefix(bucket: str) -> str:
    """Where the daily partitions live (the Glue table's location)."""
    return f"s3://{bucket}/mlscale/raw/digits/"


def markers_prefix(bucket: str) -> str:
    """Where each complete day's `_SUCCESS` marker goes."""
    return f"s3://{bucket}/mlscale/raw/_markers/"


def arrivals_prefix(bucket: str) -> str:
    """Where the producer's arrival notices go: the prefix the bucket's event notification filters on."""
    return f"s3://{bucket}/mlscale/raw/_arrivals/"


def days_ending(last: date, count: int) -> list[date]:
    """The `count` days up to and including `last`, oldest first."""
    return [last - timedelta(days=offset) for offset in range(count - 1, -1, -1)]


def producer_day(logical_date, run_after) -> date:
    """The day a producer run loads: the one before its logical date (a daily run at midnight loads the day
    that just ended); a run without a logical date (triggered from the UI or the REST API) loads yesterday."""
    moment = logical_date or run_after
    return moment.date() - timedelta(days=1)


def marker_uri(bucket: str, day: date) -> str:
    return f"{markers_prefix(bucket)}dt={day:%Y-%m-%d}/{MARKER}"


def partition_uris(bucket: str, start: date, end: date) -> list[str]:
    """The data prefixes of the days in [start, end): what the ETL reads (its stage fingerprint hashes them)."""
    return [
        f"{raw_prefix(bucket)}dt={day:%Y-%m-%d}/" for day in days_ending(end - timedelta(days=1), (end - start).days)
    ]


def marker_uris(bucket: str, start: date, end: date) -> list[str]:
    """The `_SUCCESS` URIs of the days in [start, end): what the pipeline's partition sensor waits for."""
    return [marker_uri(bucket, day) for day in days_ending(end - timedelta(days=1), (end - start).days)]


def write_partitions(s3, glue, bucket: str, database: str, days: list[date], records_per_day: int) -> list[str]:
    """Write each day of `days` that has no `_SUCCESS` yet (data, then the marker) and register the Glue table;
    the days written. A retried run rewrites only what an earlier try left unfinished."""
    from mlscale.aws.catalog import ensure_parquet_table
    from mlscale_example.datasets.raw_digits import write_day

    _, prefix = _split(raw_prefix(bucket))
    written = []
    for day in days:
        _, marker = _split(marker_uri(bucket, day))
        if _exists(s3, bucket, marker):
            continue
        write_day(s3, bucket, prefix, day, records_per_day)
        s3.put_object(Bucket=bucket, Key=marker, Body=b"")
        written.append(day.isoformat())
    ensure_parquet_table(glue, database, RAW_TABLE, raw_prefix(bucket), RAW_SCHEMA, date_partition="dt")
    return written


def announce(s3, arrivals_prefix: str, days: list[str], run_id: str) -> str | None:
    """Write the run's arrival notice for the newest of `days`; its URI, or None when this run announced before
    (a retry must not start a second pipeline run: the write is conditional, S3's If-None-Match)."""
    from botocore.exceptions import ClientError

    from mlscale.naming import run_slug

    bucket, prefix = _split(arrivals_prefix)
    key = f"{prefix.rstrip('/')}/dt={max(days)}/{run_slug(run_id)}.json"
    body = json.dumps({"days": sorted(days), "run_id": run_id}).encode()
    try:
        s3.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*", ContentType="application/json")
    except ClientError as error:
        if error.response["Error"]["Code"] in ("PreconditionFailed", "ConditionalRequestConflict"):
            return None
        raise
    return f"s3://{bucket}/{key}"


def arrived_days(triggering_asset_events: Mapping[Any, Iterable[Any]] | None) -> list[date]:
    """The days named by the arrival notices behind an asset-triggered run, oldest first.

    Each asset event of the queue watcher carries the SQS messages it read (`extra["payload"]["message_batch"]`),
    each an S3 event notification whose object keys are URL-encoded
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html)."""
    days = set()
    for events in (triggering_asset_events or {}).values():
        for event in events:
            payload = (getattr(event, "extra", None) or {}).get("payload") or {}
            for message in payload.get("message_batch") or []:
                days.update(_days_in(message.get("Body", "")))
    return sorted(days)


def _days_in(body: str) -> set[date]:
    try:
        records = json.loads(body).get("Records") or []
    except (ValueError, AttributeError):
        return set()
    days = set()
    for record in records:
        key = urllib.parse.unquote_plus(record.get("s3", {}).get("object", {}).get("key", ""))
        for part in key.split("/"):
            if part.startswith("dt="):
                try:
                    days.add(date.fromisoformat(part[3:]))
                except ValueError:
                    pass
    return days


def ensure_arrival_notifications(s3, sqs, bucket: str, arrivals_prefix: str, queue_url: str) -> str:
    """Create the arrivals queue unless it exists, let S3 send to it, and add the bucket's notification for
    objects under `arrivals_prefix` (other notifications of the bucket are kept); the queue's ARN.

    https://docs.aws.amazon.com/AmazonS3/latest/userguide/ways-to-add-notification-config-to-bucket.html"""
    name = queue_url.rstrip("/").rsplit("/", 1)[-1]
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "s3.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": arn,
                "Condition": {"ArnLike": {"aws:SourceArn": f"arn:aws:s3:::{bucket}"}},
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    prefix = _split(arrivals_prefix)[1].rstrip("/") + "/"
    config = s3.get_bucket_notification_configuration(Bucket=bucket)
    config.pop("ResponseMetadata", None)
    queues = [q for q in config.get("QueueConfigurations", []) if q.get("Id") != NOTIFICATION_ID]
    queues.append(
        {
            "Id": NOTIFICATION_ID,
            "QueueArn": arn,
            "Events": ["s3:ObjectCreated:*"],
            "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": prefix}]}},
        }
    )
    s3.put_bucket_notification_configuration(
        Bucket=bucket, NotificationConfiguration={**config, "QueueConfigurations": queues}
    )
    return arn


def _split(uri: str) -> tuple[str, str]:
    """(bucket, key) of an s3:// URI."""
    parsed = urllib.parse.urlparse(uri)
    return parsed.netloc, parsed.path.lstrip("/")


def _exists(s3, bucket: str, key: str) -> bool:
    return bool(s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1).get("KeyCount"))
