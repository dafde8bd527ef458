"""What an AWS error means, decided from its code, never its message.

SageMaker answers a Describe of a resource that does not exist with ValidationException ("Could not find
..."): the request is otherwise valid (the stage made the name), so for a Describe that code means "not
found", as the Amazon provider's SageMakerHook decides it. A throttle (ThrottlingException), an
AccessDenied or a service error is none of these: it is raised, never taken for "does not exist" (which
would lead to a second create).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

NOT_FOUND = frozenset(
    {
        "ResourceNotFound",
        "ResourceNotFoundException",
        "ValidationException",
        "ValidationError",
        "NoSuchKey",
        "NoSuchEntity",
        "EntityNotFoundException",
        "NotFound",
        "404",
    }
)


# what botocore's retry modes take for throttling (botocore/retries/standard.py and data/_retry.json)
THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)


def code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def not_found(error: ClientError, codes: frozenset[str] | tuple[str, ...] = NOT_FOUND) -> bool:
    """Did a Describe/Get fail because the resource does not exist?"""
    return code(error) in codes


def throttled(error: Exception) -> bool:
    """Did AWS refuse the call for its rate (after botocore's own retries)? Then the call may simply be retried."""
    return isinstance(error, ClientError) and code(error) in THROTTLING


def describe_or_none(describe, **request):
    """`describe(**request)`, or None when the resource does not exist; any other error is raised."""
    try:
        return describe(**request)
    except ClientError as error:
        if not_found(error):
            return None
        raise
