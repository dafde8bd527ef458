"""Deterministic AWS resource names from (dag_id, task_id, run_id, map_index).

SageMaker names are at most 63 characters matching
`[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}` and unique per account and region. The same
task run always gets the same name, so a retried task finds the job it
started; a new attempt (after a failed or stopped job) adds `-a<N>`. When the
name is too long the readable part is cut, never the hash.
"""

from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 63
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}\Z")
_HASH_LENGTH = 8


def _slug(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-zA-Z0-9]+", "-", text)).strip("-")


def run_slug(run_id: str) -> str:
    """A run id as one S3 path segment (reports, ETL output, shards of that run)."""
    return re.sub(r"[^A-Za-z0-9=-]+", "-", run_id).strip("-")


def resource_name(
    dag_id: str, task_id: str, run_id: str, map_index: int = -1, attempt: int = 1, max_length: int = MAX_LENGTH
) -> str:
    """A valid, stable name: readable start, then a hash of the full identity.

    The hash is always there: slugging maps `a_b` and `a-b` to the same text.
    """
    identity = f"{dag_id}|{task_id}|{run_id}|{map_index}"
    suffix = "" if map_index < 0 else f"-m{map_index}"
    suffix += "" if attempt <= 1 else f"-a{attempt}"
    readable = _slug(f"{dag_id}-{task_id}-{run_id}") or "mlscale"
    digest = hashlib.sha256(identity.encode()).hexdigest()[:_HASH_LENGTH]
    room = max_length - len(suffix) - _HASH_LENGTH - 1
    name = f"{readable[:room].rstrip('-')}-{digest}{suffix}"
    assert NAME_PATTERN.match(name), name
    return name


def is_valid_name(name: str) -> bool:
    return bool(NAME_PATTERN.match(name or ""))
