"""The emulator's front door: only its own address may talk to it, and every answer is AWS-shaped.

The emulator runs code it is sent, with no authentication, so a web page must not reach it: AWS SDKs and
the CLI never send an Origin header or need CORS, and a browser always sends Origin on a cross-site POST
and on every preflight, and Sec-Fetch-Site on a cross-site GET (https://www.w3.org/TR/fetch-metadata/).
A page that rebinds its own DNS name to 127.0.0.1 still sends its name as Host, so Host must name the
emulator's own address (https://en.wikipedia.org/wiki/DNS_rebinding).

moto answers a body it cannot parse, or a bug of its own, with a 500 HTML page that no SDK can read. AWS
answers 400 SerializationException (JSON protocols) and 500 InternalFailure / S3's InternalError in the
protocol's own shape (https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html).
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterable
from typing import Any

log = logging.getLogger(__name__)

REST_JSON_PATHS = ("/greengrass/v2/", "/v1/")  # Greengrass v2 and Batch: their request bodies are JSON objects
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


class Guard:
    """WSGI middleware in front of moto's dispatcher."""

    def __init__(self, app: Any, *, port: int, hosts: Iterable[str] = (), origins: Iterable[str] = ()):
        self.app, self.port = app, port
        self.hosts = LOOPBACK_NAMES | {h.strip().lower() for h in hosts if h.strip()}
        self.origins = frozenset(o.strip().rstrip("/") for o in origins if o.strip())

    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and origin.rstrip("/") not in self.origins:
            return _refuse(
                start_response,
                f"requests from a browser origin ({origin!r}) are refused: the emulator "
                "answers AWS SDKs and the CLI, which send none (allow one with "
                "MLSCALE_EMULATOR_ALLOWED_ORIGINS)",
            )
        if origin is None and environ.get("HTTP_SEC_FETCH_SITE") in ("cross-site", "same-site"):
            # a page's <img> or <script> GET carries no Origin, but every current browser says where it came from
            return _refuse(start_response, "requests a browser sends on another site's behalf are refused")
        host = environ.get("HTTP_HOST", "")
        if not self._own_host(host):
            return _refuse(
                start_response,
                f"Host {host!r} is not this emulator's address (port {self.port} of "
                f"{', '.join(sorted(self.hosts))}); add a name with "
                "MLSCALE_EMULATOR_ALLOWED_HOSTS",
            )
        if origin is not None and environ.get("REQUEST_METHOD") == "OPTIONS":
            return _preflight(start_response, origin)
        problem = malformed_body(environ)
        if problem:
            return error_response(start_response, environ, 400, "SerializationException", problem)
        return self._call(environ, start_response, origin)

    def _own_host(self, host: str) -> bool:
        name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not name:
            return False
        name = name.lower()
        # *.localhost is loopback by definition (RFC 6761): S3's virtual-hosted style names a bucket there
        return (name in self.hosts or name.endswith(".localhost")) and port == str(self.port)

    def _call(self, environ: dict, start_response, origin: str | None) -> Iterable[bytes]:
        """moto's answer, with moto's HTML 500 pages (and an exception escaping it) made AWS-shaped."""
        held: dict[str, Any] = {}

        def keep(status: str, headers: list, exc_info=None):
            held["status"], held["headers"] = status, headers
            if _html_error(status, headers):
                return lambda data: None  # the body is replaced below
            if origin is not None:
                headers = [*headers, ("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
            return start_response(status, headers, exc_info)

        try:
            body = self.app(environ, keep)
        except Exception as error:  # noqa: BLE001 - moto's own bug: the caller still gets AWS's shape
            log.exception("the emulator failed a request")
            return error_response(start_response, environ, 500, "InternalFailure", f"the emulator failed: {error!r}")
        status = held.get("status", "")
        if _html_error(status, held.get("headers", [])):
            if hasattr(body, "close"):
                body.close()
            if status.startswith(("404", "405")):
                return error_response(
                    start_response,
                    environ,
                    404,
                    "UnknownOperationException",
                    f"no operation answers {environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}",
                )
            return error_response(
                start_response,
                environ,
                500,
                "InternalFailure",
                "the emulator could not process the request (moto answered an internal error)",
            )
        return body


def malformed_body(environ: dict) -> str | None:
    """Why a JSON-protocol request's body cannot be a request, or None.

    JSON 1.0/1.1 services (SageMaker, Athena, Glue, FSx, CloudWatch Logs) name the operation in
    X-Amz-Target and take a JSON object; the restJson1 services in REST_JSON_PATHS take one as their body
    (InvokeEndpoint's body is the caller's payload, whatever it is). The body is read here and put back.
    """
    json_protocol = bool(environ.get("HTTP_X_AMZ_TARGET"))
    rest_json = (environ.get("PATH_INFO") or "").startswith(REST_JSON_PATHS)
    if not json_protocol and not (rest_json and "json" in (environ.get("CONTENT_TYPE") or "").lower()):
        return None
    body = _read_body(environ)
    if not body.strip():
        return None
    try:
        parsed = json.loads(body)
    except ValueError as error:
        return f"The request body is not JSON: {error}"
    if not isinstance(parsed, dict):
        return f"The request body must be a JSON object, not a JSON {type(parsed).__name__}"
    return None


def _read_body(environ: dict) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


def _html_error(status: str, headers: list) -> bool:
    """moto's (Flask's) own error pages: a 404 for a route it lacks, a 500 for a bug of its own."""
    html = any(k.lower() == "content-type" and "html" in v.lower() for k, v in headers)
    return html and status[:3] in ("404", "405", "500")


# restJson1 services, by the name a request is signed for: their GETs and DELETEs carry no body to tell by
REST_JSON_SIGNING_NAMES = frozenset({"batch", "greengrass", "iot", "sagemaker", "emr-serverless", "lambda"})
_SIGNED_FOR = re.compile(r"Credential=[^/,\s]+/[^/,\s]+/[^/,\s]+/([^/,\s]+)/aws4_request")


def _protocol(environ: dict) -> str:
    return protocol(
        environ.get("HTTP_X_AMZ_TARGET"), environ.get("CONTENT_TYPE") or "", environ.get("HTTP_AUTHORIZATION") or ""
    )


def signing_name(authorization: str) -> str | None:
    """The service a SigV4 request is signed for (its credential scope), or None."""
    match = _SIGNED_FOR.search(authorization)
    return match.group(1) if match else None


def protocol(amz_target: str | None, content_type: str, authorization: str = "") -> str:
    """json, query (form-encoded Action=) or rest-xml (S3), as the request shows it."""
    if amz_target or "json" in content_type.lower() or signing_name(authorization) in REST_JSON_SIGNING_NAMES:
        return "json"
    if "x-www-form-urlencoded" in content_type.lower():
        return "query"
    return "rest-xml"


REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Slow Down",
}


def error_parts(kind: str, status: int, code: str, message: str) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body of an error in the protocol's own shape: JSON with __type, query XML, or S3's XML."""
    from xml.sax.saxutils import escape

    if kind == "json":
        body = json.dumps({"__type": code, "message": message}).encode()
        headers = [("Content-Type", "application/x-amz-json-1.1"), ("x-amzn-ErrorType", code)]
    elif kind == "query":
        body = (
            f"<ErrorResponse><Error><Type>{'Sender' if status < 500 else 'Receiver'}</Type><Code>{code}</Code>"
            f"<Message>{escape(message)}</Message></Error><RequestId>emulator</RequestId></ErrorResponse>"
        ).encode()
        headers = [("Content-Type", "text/xml")]
    else:  # S3: https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
        s3_code = {
            "InternalFailure": "InternalError",
            "SerializationException": "MalformedXML",
            "UnknownOperationException": "NoSuchKey",
        }.get(code, code)
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{s3_code}</Code>'
            f"<Message>{escape(message)}</Message><RequestId>emulator</RequestId></Error>"
        ).encode()
        headers = [("Content-Type", "application/xml")]
    return [*headers, ("Content-Length", str(len(body)))], body


def error_response(start_response, environ: dict, status: int, code: str, message: str) -> list[bytes]:
    """An error in the protocol's own shape, as a WSGI answer."""
    headers, body = error_parts(_protocol(environ), status, code, message)
    start_response(f"{status} {REASONS[status]}", headers)
    return [body]


def _refuse(start_response, message: str) -> list[bytes]:
    """403 with no CORS header: a browser's script cannot read it, and learns nothing from it."""
    body = json.dumps({"__type": "AccessDeniedException", "message": message}).encode()
    start_response("403 Forbidden", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _preflight(start_response, origin: str) -> list[bytes]:
    """A preflight from an allowed origin: the methods and headers an AWS SDK for JavaScript sends."""
    start_response(
        "200 OK",
        [
            ("Access-Control-Allow-Origin", origin),
            ("Vary", "Origin"),
            ("Access-Control-Allow-Methods", "GET, PUT, POST, DELETE, HEAD"),
            (
                "Access-Control-Allow-Headers",
                "authorization, content-type, x-amz-target, x-amz-date, "
                "x-amz-content-sha256, x-amz-security-token, x-amz-user-agent",
            ),
            ("Access-Control-Expose-Headers", "x-amzn-requestid, x-amzn-errortype, etag"),
            ("Content-Length", "0"),
        ],
    )
    return [b""]
