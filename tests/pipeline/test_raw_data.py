"""The producer/pipeline contract: daily partitions with `_SUCCESS` markers, arrival notices and their S3 events."""

from __future__ import annotations

import json
from datetime import date
from types import SimpleNamespace

import boto3
import pendulum
import pytest
from moto import mock_aws

from mlscale_example.pipeline import raw_data
from mlscale_example.pipeline.layout import training_window

BUCKET = "raw-data-test"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/raw-data-test-arrivals"


@pytest.fixture
def aws():
    with mock_aws():
        clients = SimpleNamespace(
            **{name: boto3.client(name, region_name="us-east-1") for name in ("s3", "sqs", "glue")}
        )
        clients.s3.create_bucket(Bucket=BUCKET)
        yield clients


def keys(s3, prefix: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def test_a_producer_run_loads_the_day_before_its_logical_date_or_yesterday():
    midnight = pendulum.datetime(2026, 12, 3, tz="UTC")
    assert raw_data.producer_day(midnight, midnight) == date(2026, 12, 2)  # a daily run loads the day that ended
    assert raw_data.producer_day(None, midnight.add(hours=15)) == date(2026, 12, 2)  # triggered without a date
    assert raw_data.days_ending(date(2026, 12, 2), 3) == [date(2026, 11, 30), date(2026, 12, 1), date(2026, 12, 2)]


def test_each_missing_day_is_written_then_marked_complete_and_a_retry_writes_only_what_is_unfinished(aws):
    days = raw_data.days_ending(date(2026, 10, 3), 3)
    assert raw_data.write_partitions(aws.s3, aws.glue, BUCKET, "rawdb", days, 100) == [
        "2026-10-01",
        "2026-10-02",
        "2026-10-03",
    ]
    assert keys(aws.s3, "mlscale/raw/_markers/") == [
        f"mlscale/raw/_markers/dt=2026-10-0{d}/_SUCCESS" for d in (1, 2, 3)
    ]
    assert len(keys(aws.s3, "mlscale/raw/digits/")) == 3  # markers stay out of the table's location
    table = aws.glue.get_table(DatabaseName="rawdb", Name="raw_digits")["Table"]
    assert table["StorageDescriptor"]["Location"] == f"s3://{BUCKET}/mlscale/raw/digits/"

    # a killed try left day 2's data without its marker: only day 2 is written again
    aws.s3.delete_object(Bucket=BUCKET, Key="mlscale/raw/_markers/dt=2026-10-02/_SUCCESS")
    assert raw_data.write_partitions(aws.s3, aws.glue, BUCKET, "rawdb", days, 100) == ["2026-10-02"]
    assert raw_data.write_partitions(aws.s3, aws.glue, BUCKET, "rawdb", days, 100) == []


def test_the_sensor_waits_for_the_markers_of_every_day_of_the_window():
    uris = raw_data.marker_uris(BUCKET, date(2026, 10, 4), date(2026, 10, 11))
    assert len(uris) == 7
    assert uris[0] == f"s3://{BUCKET}/mlscale/raw/_markers/dt=2026-10-04/_SUCCESS"
    assert uris[-1].endswith("dt=2026-10-10/_SUCCESS")
    # and the ETL's fingerprint hashes the same days' data, not their markers
    data = raw_data.partition_uris(BUCKET, date(2026, 10, 4), date(2026, 10, 11))
    assert data[0] == f"s3://{BUCKET}/mlscale/raw/digits/dt=2026-10-04/" and len(data) == 7


def test_an_arrival_notice_is_written_once_per_run_so_a_retry_starts_no_second_pipeline_run(aws):
    prefix = raw_data.arrivals_prefix(BUCKET)
    uri = raw_data.announce(aws.s3, prefix, ["2026-10-02", "2026-10-03"], "manual__2026-10-04T09:00:00+00:00")
    assert uri == f"s3://{BUCKET}/mlscale/raw/_arrivals/dt=2026-10-03/manual-2026-10-04T09-00-00-00-00.json"
    assert raw_data.announce(aws.s3, prefix, ["2026-10-02", "2026-10-03"], "manual__2026-10-04T09:00:00+00:00") is None
    body = json.loads(aws.s3.get_object(Bucket=BUCKET, Key=uri.split(f"{BUCKET}/", 1)[1])["Body"].read())
    assert body == {"days": ["2026-10-02", "2026-10-03"], "run_id": "manual__2026-10-04T09:00:00+00:00"}


def test_a_notice_reaches_the_queue_and_names_the_days_the_pipeline_trains_up_to(aws):
    # a notification of the user's own on the bucket is kept
    other = aws.sqs.create_queue(QueueName="someone-elses")["QueueUrl"]
    other_arn = aws.sqs.get_queue_attributes(QueueUrl=other, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    aws.s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [{"Id": "theirs", "QueueArn": other_arn, "Events": ["s3:ObjectRemoved:*"]}]
        },
    )
    for _ in range(2):  # idempotent
        arn = raw_data.ensure_arrival_notifications(
            aws.s3, aws.sqs, BUCKET, raw_data.arrivals_prefix(BUCKET), QUEUE_URL
        )
    config = aws.s3.get_bucket_notification_configuration(Bucket=BUCKET)["QueueConfigurations"]
    assert sorted(c["Id"] for c in config) == ["mlscale-raw-arrivals", "theirs"]
    assert arn.endswith(":raw-data-test-arrivals")
    policy = json.loads(
        aws.sqs.get_queue_attributes(QueueUrl=QUEUE_URL, AttributeNames=["Policy"])["Attributes"]["Policy"]
    )
    assert policy["Statement"][0]["Principal"] == {"Service": "s3.amazonaws.com"}

    raw_data.write_partitions(aws.s3, aws.glue, BUCKET, "rawdb", [date(2026, 10, 3)], 100)  # data: no event
    raw_data.announce(aws.s3, raw_data.arrivals_prefix(BUCKET), ["2026-10-03"], "scheduled__2026-10-04T00:00:00+00:00")
    messages = aws.sqs.receive_message(QueueUrl=QUEUE_URL, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
    messages = [m for m in messages if "s3:TestEvent" not in m["Body"]]
    assert len(messages) == 1

    # what the watcher's asset event carries to the pipeline run (SqsSensorTrigger's message batch)
    event = SimpleNamespace(extra={"from_trigger": True, "payload": {"status": "success", "message_batch": messages}})
    assert raw_data.arrived_days({"mlscale_raw_arrivals": [event]}) == [date(2026, 10, 3)]


def test_the_days_of_several_events_are_merged_and_foreign_messages_ignored():
    def message(key: str) -> dict:
        return {"Body": json.dumps({"Records": [{"s3": {"object": {"key": key}}}]})}

    batch = [
        message("mlscale/raw/_arrivals/dt%3D2026-10-05/run-a.json"),
        {"Body": "not json"},
        {"Body": json.dumps({"Event": "s3:TestEvent"})},
        message("other/key.json"),
    ]
    later = [message("mlscale/raw/_arrivals/dt%3D2026-10-07/run-b.json")]
    events = {
        "asset": [
            SimpleNamespace(extra={"payload": {"message_batch": batch}}),
            SimpleNamespace(extra={"payload": {"message_batch": later}}),
            SimpleNamespace(extra={}),
        ]
    }
    assert raw_data.arrived_days(events) == [date(2026, 10, 5), date(2026, 10, 7)]
    assert raw_data.arrived_days(None) == [] and raw_data.arrived_days({}) == []


def test_a_run_started_by_new_data_trains_on_the_week_ending_with_the_newest_day():
    run_after = pendulum.datetime(2026, 12, 3, 0, 5, tz="UTC")
    start, end = training_window(None, None, run_after, arrived=[date(2026, 11, 30), date(2026, 12, 2)])
    assert (start.to_date_string(), end.to_date_string()) == ("2026-11-26", "2026-12-03")


@pytest.mark.parametrize(
    "run_type, announce, notices",
    [("scheduled", True, 1), ("manual", True, 1), ("backfill", True, 0), ("manual", False, 0)],
)
def test_the_producer_announces_new_days_except_for_backfills_or_when_told_not_to(aws, run_type, announce, notices):
    from mlscale_example.pipeline.steps import produce_raw_days

    midnight = pendulum.datetime(2026, 10, 5, tz="UTC")
    dag_run = SimpleNamespace(run_type=run_type, run_after=midnight, run_id=f"{run_type}__2026-10-05T00:00:00+00:00")
    params = {"days": 2, "records_per_day": 100, "announce": announce}
    result = produce_raw_days(None, BUCKET, "rawdb", midnight, dag_run, params)
    assert result["written"] == ["2026-10-03", "2026-10-04"]
    assert len(keys(aws.s3, "mlscale/raw/_arrivals/")) == notices == (result["notice"] is not None)
    # nothing new on a second run: no notice either
    again = produce_raw_days(None, BUCKET, "rawdb", midnight, dag_run, params)
    assert again["written"] == [] and again["notice"] is None
