"""A stage's fingerprint, and the cache of the latest successful job for each fingerprint (JSON in S3).

The fingerprint hashes what decides a stage's output: the request it would send with run-specific names
replaced by placeholders (the job name, its own output prefixes), its code and image, and the identity of
every input (each object's key, ETag and size under the input's S3 prefix). Two runs over the same data with
the same settings get the same fingerprint wherever their data lives; one changed object, hyperparameter
or line of code gives another.

An entry `<location>/<stage>/<fingerprint>.json` names the job that succeeded with that fingerprint, its
run and its result (the stage's XCom). Only success writes one, and a later success overwrites it, so an
entry is the latest successful job. A JSON object in S3 rather than a search of the jobs' tags (SageMaker's
Search): Athena queries carry no tags, and one GetObject is the whole lookup on AWS and the emulator alike.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

FINGERPRINT_TAG = "mlscale:fingerprint"  # on the job a stage launched (SageMaker and Batch tags)


def fingerprint(stage: str, version: str, parts: dict[str, Any]) -> str:
    """sha256 of the stage's kind, the cache version and its parts (canonical JSON)."""
    canonical = json.dumps({"stage": stage, "version": version, "parts": parts}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def with_placeholders(value: Any, names: dict[str, str]) -> Any:
    """`value` with every occurrence of each key of `names` (a URI) replaced by its placeholder, longest first."""
    ordered = sorted(names.items(), key=lambda item: -len(item[0]))

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            for uri, placeholder in ordered:
                if uri:
                    item = item.replace(uri, placeholder)
            return item
        if isinstance(item, dict):
            return {key: walk(v) for key, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v) for v in item]
        return item

    return walk(value)


def s3_identity(s3_client: Any, uris: str | list[str]) -> str:
    """A hash of every object under the URI(s): key relative to the URI, ETag, size. No object: its own hash."""
    listing = []
    for uri in [uris] if isinstance(uris, str) else list(uris):
        bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        paginator = s3_client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                listing.append([obj["Key"][len(prefix) :], obj.get("ETag", ""), obj.get("Size", 0)])
        listing.append(["--", len(listing)])  # separates the URIs of a list
    return hashlib.sha256(json.dumps(listing).encode()).hexdigest()


def entry_uri(location: str, stage: str, key: str) -> str:
    return f"{location.rstrip('/')}/{stage}/{key}.json"


def read_entry(s3_hook: Any, location: str, stage: str, key: str) -> dict[str, Any] | None:
    """The entry, or None: one GetObject on the hook's client (S3Hook.read_key builds a boto3 resource: ~0.5 s)."""
    bucket, _, object_key = entry_uri(location, stage, key).removeprefix("s3://").partition("/")
    client = s3_hook.get_conn()
    try:
        body = client.get_object(Bucket=bucket, Key=object_key)["Body"].read()
    except client.exceptions.NoSuchKey:
        return None
    return json.loads(body)


def write_entry(
    s3_hook: Any,
    location: str,
    stage: str,
    key: str,
    *,
    job: str,
    dag_id: str,
    run_id: str,
    task_id: str,
    result: dict[str, Any],
) -> str:
    from mlscale.aws.s3_objects import put_object

    uri = entry_uri(location, stage, key)
    entry = {
        "fingerprint": key,
        "stage": stage,
        "job": job,
        "dag_id": dag_id,
        "run_id": run_id,
        "task_id": task_id,
        "recorded_at": datetime.now(UTC).isoformat(),
        "result": result,
    }
    put_object(s3_hook, uri, json.dumps(entry, default=str).encode(), "application/json")
    return uri


def age(entry: dict[str, Any]) -> float:
    """Seconds since the entry was recorded."""
    return (datetime.now(UTC) - datetime.fromisoformat(entry["recorded_at"])).total_seconds()
