"""Small checks shared by the specs; each raises SpecError naming the field and the rule."""

from __future__ import annotations

import posixpath
import re
from functools import cache
from typing import Any

from mlscale.naming import NAME_PATTERN
from mlscale.specs.errors import SpecError

ROLE_ARN = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+\Z")
NAME = NAME_PATTERN  # SageMaker, Greengrass and registry names share the rule
INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9]+\.[a-z0-9]+\Z")
TAG_VALUE = re.compile(r"^[\w\s.:/=+\-@]{0,256}\Z")  # the Tag Value rule SageMaker and Greengrass share
BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")
IP_ADDRESS = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/.*)?\Z")


def require(condition: bool, field: str, rule: str, value: Any = None) -> None:
    if not condition:
        raise SpecError(field, rule, value)


@cache
def sagemaker_enum(shape: str) -> tuple[str, ...]:
    """Allowed values from botocore's SageMaker model (TrainingInstanceType, TargetDevice, Framework, ...)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for(shape).enum)


def instance_type(value: Any, field: str, shape: str) -> None:
    """An instance type the API takes for this kind of job (`shape`: TrainingInstanceType, ...)."""
    require(
        isinstance(value, str) and bool(INSTANCE_TYPE.match(value)),
        field,
        "must look like ml.<family>.<size>, e.g. ml.g5.2xlarge",
        value,
    )
    require(value in sagemaker_enum(shape), field, f"is not a SageMaker {shape} (botocore's list)", value)


def path_under(value: Any, field: str, root: str) -> None:
    """An absolute path that stays below `root` once `..` and `.` are resolved."""
    require(isinstance(value, str) and value.startswith("/"), field, f"must be an absolute path below {root}", value)
    require(
        (posixpath.normpath(value) + "/").startswith(root.rstrip("/") + "/"),
        field,
        f"must stay below {root} ('..' may not leave it)",
        value,
    )


def role_arn(value: Any, field: str = "role_arn") -> None:
    require(
        isinstance(value, str) and bool(ROLE_ARN.match(value)),
        field,
        "must be an IAM role ARN (arn:aws:iam::<account>:role/<name>)",
        value,
    )


def s3_uri(value: Any, field: str) -> None:
    require(isinstance(value, str) and bool(S3_URI.match(value)), field, "must be an s3://bucket/prefix URI", value)
    require(
        valid_bucket(value[len("s3://") :].split("/", 1)[0]),
        field,
        "names a bucket S3 cannot have (two adjacent periods, or an IP address)",
        value,
    )


def valid_bucket(name: str) -> bool:
    """S3's bucket naming rules (https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html)."""
    return bool(BUCKET.fullmatch(name)) and ".." not in name and not IP_ADDRESS.fullmatch(name)


def is_int(value: Any) -> bool:
    """An integer, and not a bool (Python's True is 1: `min_rows=True` must not pass as one row)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def in_range(value: Any, field: str, low: int, high: int) -> None:
    require(
        isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
        field,
        f"must be an integer from {low} to {high}",
        value,
    )


def tags(value: dict[str, str], field: str = "tags") -> None:
    require(isinstance(value, dict), field, "must be a mapping of tag key to value", value)
    require(len(value) <= 50, field, "at most 50 tags", len(value))
    for key, tag_value in value.items():
        require(isinstance(key, str) and 1 <= len(key) <= 128, f"{field}[{key!r}]", "keys are 1-128 characters")
        require(not key.lower().startswith("aws:"), f"{field}[{key!r}]", "the aws: prefix is reserved for AWS")
        require(
            isinstance(tag_value, str) and len(tag_value) <= 256,
            f"{field}[{key!r}]",
            "values are strings of at most 256 characters",
            tag_value,
        )


def model_version(value: Any, field: str = "model_version") -> None:
    """Optional; a tag value, compared as a string to order deploys (newer sorts later)."""
    require(
        value is None or (isinstance(value, str) and bool(TAG_VALUE.match(value))),
        field,
        "must be at most 256 letters, digits, spaces and _.:/=+-@ (it is stored as a tag)",
        value,
    )
