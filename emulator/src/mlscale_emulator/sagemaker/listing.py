"""ListTrainingJobs, ListProcessingJobs, ListTransformJobs and ListCompilationJobs as SageMaker answers them.

moto cut a page before it filtered (a filtered list paged through every job of the account, ten at a time),
ignored SortBy and SortOrder, compared LastModifiedTimeAfter (epoch seconds on the wire) with a datetime,
and left SecondaryStatus out of a training job's summary. A waiter that asks "which jobs changed since
my last look" (mlscale.waits.poller) needs each of those right: filter, then sort, then page; a summary
holds what the API reference's <Kind>JobSummary lists and the job has
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListTrainingJobs.html).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from moto.sagemaker import responses as sm_responses
from moto.sagemaker.exceptions import ValidationError

KINDS = ("training", "processing", "transform", "compilation")
SORT_KEYS = {
    "Name": lambda kind: f"{kind}_job_name",
    "CreationTime": lambda kind: "creation_time",
    "Status": lambda kind: f"{kind}_job_status",
}


def _moment(value: Any) -> datetime | None:
    """A request's timestamp (epoch seconds, or ISO 8601) or a model's datetime, as an aware UTC datetime."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, (int, float)) or re.fullmatch(r"\d+(\.\d+)?", str(value)):
        return datetime.fromtimestamp(float(value), UTC)
    try:
        return _moment(datetime.fromisoformat(str(value)))
    except ValueError:
        raise ValidationError(f"Value '{value}' is not a valid timestamp") from None


def _snake(member: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", member).lower()


def summary(job: Any, kind: str, members: list[str]) -> dict[str, Any]:
    """The job's <Kind>JobSummary: each listed member the job has a value for."""
    found = {}
    for member in members:
        attribute = "arn" if member == f"{kind.capitalize()}JobArn" else _snake(member)
        value = getattr(job, attribute, None)
        if value not in (None, "", {}):
            found[member] = value
    return found


def _lister(kind: str):
    prefix = kind.capitalize()
    members: list[str] = []

    def list_jobs(self) -> str:
        if not members:
            shape = _output_shape(f"List{prefix}Jobs")
            members.extend(shape.members[f"{prefix}JobSummaries"].member.members)
        params = self._get_params()
        jobs = list(getattr(self.sagemaker_backend, f"{kind}_jobs").values())
        checks = [
            ("NameContains", lambda job, v: v in getattr(job, f"{kind}_job_name")),
            ("StatusEquals", lambda job, v: getattr(job, f"{kind}_job_status") == v),
            ("CreationTimeAfter", lambda job, v: _moment(job.creation_time) > _moment(v)),
            ("CreationTimeBefore", lambda job, v: _moment(job.creation_time) < _moment(v)),
            ("LastModifiedTimeAfter", lambda job, v: _moment(job.last_modified_time) > _moment(v)),
            ("LastModifiedTimeBefore", lambda job, v: _moment(job.last_modified_time) < _moment(v)),
        ]
        for key, keep in checks:
            if params.get(key) not in (None, ""):
                jobs = [job for job in jobs if keep(job, params[key])]
        sort_key = SORT_KEYS.get(params.get("SortBy") or "CreationTime", SORT_KEYS["CreationTime"])(kind)
        jobs.sort(
            key=lambda job: _moment(getattr(job, sort_key)) if sort_key.endswith("_time") else getattr(job, sort_key),
            reverse=params.get("SortOrder") == "Descending",
        )
        start = _start(params.get("NextToken"), len(jobs))
        size = int(params.get("MaxResults") or 10)  # the API's default page
        page = jobs[start : start + size]
        answer: dict[str, Any] = {f"{prefix}JobSummaries": [_wire(summary(job, kind, members)) for job in page]}
        if start + size < len(jobs):
            answer["NextToken"] = str(start + size)
        return json.dumps(answer)

    return list_jobs


def _wire(values: dict[str, Any]) -> dict[str, Any]:
    """Timestamps as the JSON protocol sends them: epoch seconds."""
    return {k: _moment(v).timestamp() if isinstance(v, datetime) else v for k, v in values.items()}


def _start(token: Any, total: int) -> int:
    if token in (None, ""):
        return 0
    if not re.fullmatch(r"\d{1,9}", str(token)) or int(token) > total:
        raise ValidationError("Invalid pagination token")
    return int(token)


def _output_shape(operation: str):
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker").operation_model(operation).output_shape


def install() -> None:
    for kind in KINDS:
        setattr(sm_responses.SageMakerResponse, f"list_{kind}_jobs", _lister(kind))
