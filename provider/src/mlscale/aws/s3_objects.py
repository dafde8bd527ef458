"""Small S3 reads and writes the stages share (reports, evaluation results), through the provider's S3Hook."""

from __future__ import annotations

import io
import json
from typing import Any


def put_object(s3_hook: Any, uri: str, body: bytes, content_type: str) -> None:
    bucket, key = s3_hook.parse_s3_url(uri)
    s3_hook.get_conn().put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)


def read_json(s3_hook: Any, uri: str) -> Any | None:
    """The JSON object at `uri`, or None when there is none."""
    bucket, key = s3_hook.parse_s3_url(uri)
    if not s3_hook.check_for_key(key, bucket_name=bucket):
        return None
    return json.loads(s3_hook.read_key(key, bucket_name=bucket))


def is_data_key(key: str) -> bool:
    """Whether an object under a data prefix holds data: Athena, Hive and Spark skip names starting with '_' or
    '.' (Spark's _SUCCESS marker, .crc files) and folder markers
    (https://docs.aws.amazon.com/athena/latest/ug/tables-location-format.html)."""
    name = key.rsplit("/", 1)[-1]
    return bool(name) and not name.startswith(("_", "."))


class S3RangeFile(io.RawIOBase):
    """A seekable, read-only file over one S3 object that fetches only the byte ranges read (ranged GETs): a
    Parquet footer costs a few kilobytes, not the object."""

    def __init__(self, client: Any, bucket: str, key: str, size: int):
        self.client, self.bucket, self.key, self.size, self.position = client, bucket, key, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = 0) -> int:
        self.position = {0: offset, 1: self.position + offset, 2: self.size + offset}[whence]
        return self.position

    def read(self, count: int = -1) -> bytes:
        end = self.size if count < 0 else min(self.size, self.position + count)
        if end <= self.position:
            return b""
        body = self.client.get_object(Bucket=self.bucket, Key=self.key, Range=f"bytes={self.position}-{end - 1}")
        data = body["Body"].read()
        self.position += len(data)
        return data
