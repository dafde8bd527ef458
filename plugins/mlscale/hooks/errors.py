"""What an AWS error means, decided from its code, never its message.

SageMaker answers a Describe of a resource that does not exist with ValidationException ("Could not find
..."): the request is otherwise valid (the stage made the name), so for a Describe that code means "not
found", as the Amazon provider's SageMakerHook decides it. A throttle (ThrottlingException), an
AccessDenied or a service error is none of these: it is raised, never taken for "does not exist" (which
would lead to a second create).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

NOT_FOUND = frozenset({"ResourceNotFound", "ResourceNotFoundException", "ValidationException", "ValidationError",
                       "NoSuchKey", "NoSuchEntity", "EntityNotFoundException", "NotFound", "404"})  # fmt: skip


def code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def not_found(error: ClientError, codes: frozenset[str] | tuple[str, ...] = NOT_FOUND) -> bool:
    """Did a Describe/Get fail because the resource does not exist?"""
    return code(error) in codes


def describe_or_none(describe, **request):
    """`describe(**request)`, or None when the resource does not exist; any other error is raised."""
    try:
        return describe(**request)
    except ClientError as error:
        if not_found(error):
            return None
        raise
