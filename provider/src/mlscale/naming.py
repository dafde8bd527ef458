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


# A job name the DAG author gives (`job_name=`) follows the service's own rule; later attempts add `-a<N>`,
# cutting the name to fit (SageMaker CreateTrainingJob TrainingJobName; AWS Batch SubmitJob jobName).
JOB_NAME_RULES = {
    "SageMaker": (NAME_PATTERN, MAX_LENGTH, "must be 1-63 letters, digits and '-' (a SageMaker job name)"),
    "Batch": (
        re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z"),
        128,
        "must be 1-128 letters, digits, '-' and '_' (an AWS Batch job name)",
    ),
}


def check_job_name(value: object, service: str) -> None:
    """SpecError naming `job_name` and the service's rule, before any AWS call."""
    from mlscale.specs.rules import require

    pattern, _, rule = JOB_NAME_RULES[service]
    require(isinstance(value, str) and bool(pattern.match(value)), "job_name", rule, value)


def attempt_job_name(base: str, attempt: int, service: str) -> str:
    """The name of a job's `attempt` (1: the base itself), within the service's length."""
    if attempt == 1:
        return base
    suffix = f"-a{attempt}"
    return base[: JOB_NAME_RULES[service][1] - len(suffix)].rstrip("-_") + suffix
