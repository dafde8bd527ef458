"""Every API answer in its protocol's shape: what moto cannot serve names the operation; none is an HTML page.

moto raises Python's not-implemented exception for an operation it lacks (and for options of one it has); any other
exception of its own becomes Flask's HTML 500 page, which no SDK can parse (botocore: "Unable to parse
response ... invalid XML received"). Here both become the protocol's own error, as the AWS common errors
name them: 501 NotImplemented and 500 InternalFailure
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/CommonErrors.html), with the service and the
operation in the message. The guard still catches what escapes this (guard.Guard._call).

An answer to an API call that a handler gives as a plain string (the emulator's own handlers, and some of
moto's) leaves Flask's default Content-Type, text/html; here it says JSON or XML, as AWS's answers do.
"""

from __future__ import annotations

import logging
from typing import Any

from mlscale_emulator import guard

log = logging.getLogger(__name__)

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    from moto.core.utils import convert_to_flask_response
    from werkzeug.exceptions import HTTPException

    moto_call = convert_to_flask_response.__call__

    def call(self, args: Any = None, **kwargs: Any) -> Any:
        from flask import request

        try:
            return _typed(request, moto_call(self, args, **kwargs))
        except HTTPException:
            raise  # moto's own AWS-shaped errors are HTTPExceptions that Flask renders
        except NotImplementedError as error:
            return _answer(
                request, 501, "NotImplemented", f"The emulator does not implement {operation(request)}: {error}"
            )
        except Exception as error:  # noqa: BLE001 - a bug of moto's or the emulator's: still AWS's shape
            log.exception("the emulator failed %s", operation(request))
            return _answer(request, 500, "InternalFailure", f"The emulator failed {operation(request)}: {error!r}")

    convert_to_flask_response.__call__ = call
    _installed = True


def operation(request: Any) -> str:
    """Service.Operation as the request names it: X-Amz-Target, a query Action, or its method and path."""
    target = request.headers.get("X-Amz-Target")
    if target:
        return target
    service = guard.signing_name(request.headers.get("Authorization", "")) or "the service"
    action = request.values.get("Action") if request.method in ("GET", "POST") else None
    return f"{service} {action}" if action else f"{service} {request.method} {request.path}"


def _typed(request: Any, response: Any) -> Any:
    """A handler's plain-string answer to an AWS API call (Flask's text/html) typed as what it is: JSON, or
    XML. Pages of the emulator's console (/moto-api/, unsigned, read by a browser) stay HTML."""
    if response.mimetype != "text/html" or response.direct_passthrough or response.is_streamed:
        return response
    if not (request.headers.get("X-Amz-Target") or guard.signing_name(request.headers.get("Authorization", ""))):
        return response
    if request.headers.get("X-Amz-Target"):
        response.headers["Content-Type"] = "application/x-amz-json-1.1"
    else:
        response.headers["Content-Type"] = "text/xml" if response.get_data()[:1] == b"<" else "application/json"
    return response


def _answer(request: Any, status: int, code: str, message: str) -> Any:
    from flask import Response

    kind = guard.protocol(
        request.headers.get("X-Amz-Target"),
        request.headers.get("Content-Type", ""),
        request.headers.get("Authorization", ""),
    )
    headers, body = guard.error_parts(kind, status, code, message)
    return Response(response=body, status=status, headers=dict(headers))
