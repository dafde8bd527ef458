"""S3 event notifications reach SQS on the emulator, filtered by prefix, as the event-driven start needs."""

from __future__ import annotations

import json

import boto3
import pytest

pytestmark = pytest.mark.emulator


def test_an_object_under_the_notified_prefix_sends_one_event_to_the_queue(emulator, clients):
    sqs = boto3.client("sqs", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    s3 = clients["s3"]
    s3.create_bucket(Bucket="events-test")
    queue = sqs.create_queue(QueueName="events-test-arrivals")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_bucket_notification_configuration(
        Bucket="events-test",
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": arn,
                    "Events": ["s3:ObjectCreated:*"],
                    "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "raw/_arrivals/"}]}},
                }
            ]
        },
    )
    s3.put_object(Bucket="events-test", Key="raw/dt=2026-10-01/part-0.csv", Body=b"not notified")
    s3.put_object(Bucket="events-test", Key="raw/_arrivals/dt=2026-10-01.json", Body=b"{}")

    bodies = [
        json.loads(m["Body"])
        for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    ]
    records = [r for body in bodies if body.get("Event") != "s3:TestEvent" for r in body["Records"]]
    assert [r["s3"]["object"]["key"] for r in records] == [
        "raw%2F_arrivals%2Fdt%3D2026-10-01.json"
    ]  # URL-encoded, as S3 sends it
    assert records[0]["eventName"] == "ObjectCreated:Put"
