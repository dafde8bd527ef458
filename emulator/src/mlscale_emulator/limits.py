"""Request-rate limits, as AWS applies them: a token bucket per account, region, service and operation.

A user should meet throttling here before AWS throttles them: a triggerer that polls a thousand waits, a log
tail per wait. A throttled request gets the service's own error (the code, status and shape its botocore
model and documentation give), so botocore's retry modes back off as they do on AWS.

Figures, per account and region (requests per second, burst):
- CloudWatch Logs, https://docs.aws.amazon.com/general/latest/gr/cwl_region.html (Service quotas):
  GetLogEvents and DescribeLogStreams 25, FilterLogEvents 5, PutLogEvents 5,000.
- Athena, https://docs.aws.amazon.com/athena/latest/ug/service-limits.html (API calls): StartQueryExecution
  and StopQueryExecution 20 (burst 80), GetQueryExecution and GetQueryResults 100 (burst 200), the rest 20.
- S3, https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html: 5,500 GET/HEAD and
  3,500 PUT/COPY/POST/DELETE per second per prefix (counted per bucket here).
- SageMaker and Batch publish no rates ("Rate exceeded" is not adjustable, SageMaker's quotas page says):
  assumed 20 Describe*/List* and 5 other calls a second per operation for SageMaker (burst twice that), 50
  for Batch. MLSCALE_EMULATOR_LIMITS changes any of them: a JSON object of {"service:Operation": [rate,
  burst]} ("sagemaker:Describe*" and "sagemaker:*" match families), or "off" (`mlscale emulator up
  --no-limits`). The emulator's own executors (log shipping, staging) are not counted: on AWS that is the
  service's work, not the account's calls.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterable
from typing import Any

EXECUTOR_AGENT = "mlscale-emulator-executor"  # user_agent_extra of the emulator's own clients
RATES: dict[str, tuple[float, float]] = {
    "logs:GetLogEvents": (25, 25),
    "logs:DescribeLogStreams": (25, 25),
    "logs:FilterLogEvents": (5, 5),
    "logs:PutLogEvents": (5000, 5000),
    "logs:*": (50, 50),
    "athena:StartQueryExecution": (20, 80),
    "athena:StopQueryExecution": (20, 80),
    "athena:GetQueryExecution": (100, 200),
    "athena:GetQueryResults": (100, 200),
    "athena:*": (20, 40),
    "s3:read": (5500, 5500),
    "s3:write": (3500, 3500),
    "sagemaker:Describe*": (20, 40),
    "sagemaker:List*": (20, 40),
    "sagemaker:*": (5, 10),
    "batch:*": (50, 100),
}
# the service's throttling error: HTTP status and code
THROTTLED = {
    "athena": (400, "TooManyRequestsException"),
    "batch": (429, "TooManyRequestsException"),
    "s3": (503, "SlowDown"),
}
DEFAULT_THROTTLED = (400, "ThrottlingException")  # SageMaker, CloudWatch Logs, and the other JSON services
log = logging.getLogger(__name__)
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


def configured() -> dict[str, tuple[float, float]] | None:
    """The rates in force: RATES with MLSCALE_EMULATOR_LIMITS's changes; None when limits are off."""
    setting = os.environ.get("MLSCALE_EMULATOR_LIMITS", "").strip()
    if setting.lower() in ("off", "false", "0", "none"):
        return None
    rates = dict(RATES)
    if setting:
        changes = json.loads(setting)  # a bad value fails the server's start, naming the variable
        if not isinstance(changes, dict):
            raise ValueError(
                "MLSCALE_EMULATOR_LIMITS must be 'off' or a JSON object of {\"service:Operation\": [rate, burst]}"
            )
        rates.update({key: (float(value[0]), float(value[1])) for key, value in changes.items()})
    return rates


def rate_for(rates: dict[str, tuple[float, float]], service: str, operation: str) -> tuple[float, float] | None:
    """The operation's own rate, else its family's (`Describe*`), else the service's (`*`)."""
    if f"{service}:{operation}" in rates:
        return rates[f"{service}:{operation}"]
    for key, rate in rates.items():
        family = key.partition(":")[2]
        if (
            key.startswith(f"{service}:")
            and family.endswith("*")
            and family != "*"
            and operation.startswith(family[:-1])
        ):
            return rate
    return rates.get(f"{service}:*")


class Buckets:
    """Token buckets, refilled continuously: `rate` a second, holding at most `burst`."""

    def __init__(self):
        self._state: dict[tuple, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: tuple, rate: float, burst: float, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, stamp = self._state.get(key, (burst, now))
            tokens = min(burst, tokens + (now - stamp) * rate)
            allowed = tokens >= 1
            self._state[key] = (tokens - 1 if allowed else tokens, now)
            return allowed


def request_identity(environ: dict) -> tuple[str, str, str, str] | None:
    """(account key, region, service, operation) of a signed request; None when it names no service."""
    found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if not found:
        return None
    access_key, region, service = found.groups()
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        operation = target.rpartition(".")[2]
    elif service == "s3":
        operation = "read" if environ.get("REQUEST_METHOD") in ("GET", "HEAD") else "write"
    else:
        query = environ.get("QUERY_STRING", "")
        action = re.search(r"(?:^|&)Action=([A-Za-z]+)", query)
        operation = action.group(1) if action else (environ.get("PATH_INFO") or "/").rstrip("/").rpartition("/")[2]
    scope = (environ.get("PATH_INFO") or "/").lstrip("/").split("/", 1)[0] if service == "s3" else ""
    return access_key, region, service, operation + (f"@{scope}" if scope else "")


class Throttle:
    """WSGI middleware: refuse a request whose bucket is empty, with the service's throttling error."""

    def __init__(self, app: Any, rates: dict[str, tuple[float, float]] | None, refuse):
        self.app, self.rates, self.refuse = app, rates, refuse
        self.buckets = Buckets()
        self._said: set[tuple[str, str]] = set()

    def _say_once(self, service: str, operation: str, rate: tuple[float, float]) -> None:
        """The server's log says which calls were throttled, once per operation: where a client polls too often."""
        if (service, operation) not in self._said:
            self._said.add((service, operation))
            log.info("throttled %s %s: over %g requests a second (burst %g)", service, operation, *rate)

    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        if self.rates is not None and EXECUTOR_AGENT not in environ.get("HTTP_USER_AGENT", ""):
            identity = request_identity(environ)
            if identity is not None:
                access_key, region, service, operation = identity
                rate = rate_for(self.rates, service, operation.partition("@")[0])
                if rate is not None and not self.buckets.take(identity, *rate):
                    self._say_once(service, operation, rate)
                    status, code = THROTTLED.get(service, DEFAULT_THROTTLED)
                    return self.refuse(start_response, environ, status, code, "Rate exceeded")
        return self.app(environ, start_response)
