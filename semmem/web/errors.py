"""The one table from error classes to HTTP status, and the error envelope built from it.

Nothing else in semmem builds an error response: routes raise ``SemmemError`` subclasses (or
let anything else escape, which becomes a logged 500 ``internal`` without a stack trace).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import Response

from semmem.errors import (
    Conflict,
    DeadlineExceeded,
    Forbidden,
    IdempotencyMismatch,
    InvalidArguments,
    InvalidInput,
    NotFound,
    Overloaded,
    SemmemError,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from semmem.web.jsonio import dumps

log = logging.getLogger("semmem.web")

STATUS: dict[type[SemmemError], int] = {
    InvalidInput: 400,
    DeadlineExceeded: 400,
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    IdempotencyMismatch: 409,
    TooLarge: 413,
    InvalidArguments: 422,
    Overloaded: 429,
    Unavailable: 503,
}
RETRY_AFTER_S: dict[type[SemmemError], int] = {Overloaded: 1, Unavailable: 2}
MEDIA_TYPE = "application/json"
# What a caller reads for a server-side failure; the real message (engine errors, paths, store
# URIs) goes to the log only, since error messages reach the model unchanged.
PUBLIC_5XX = {
    500: "internal error; logged with operation id {op}",
    503: "memory is unavailable right now; retry shortly (logged with operation id {op})",
}


class NotReady(Unavailable):
    """The app itself is not ready (still loading, or loading failed); its message is public."""


def status_of(exc: SemmemError) -> int:
    """HTTP status of a domain error: the entry of its nearest class in ``STATUS``."""
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def envelope(code: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    """The contract's error body ``{"error": {"code", "message", "details"?}}``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return dumps({"error": error})


def error_response(exc: SemmemError, operation_id: str = "-", *, quiet: bool = False
                   ) -> Response:
    """The response for a domain error, logged with the operation id (unless ``quiet``)."""
    status = status_of(exc)
    headers: dict[str, str] = {}
    for cls in type(exc).__mro__:
        if cls in RETRY_AFTER_S:
            headers["Retry-After"] = str(RETRY_AFTER_S[cls])
            break
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="semmem"'
    log.log(
        logging.DEBUG if quiet else logging.WARNING if status >= 500 else logging.INFO,
        "operation %s: %d %s: %s", operation_id, status, exc.code, exc.message,
    )
    message, details = exc.message, exc.details
    if status >= 500 and not isinstance(exc, NotReady):
        message, details = PUBLIC_5XX.get(status, PUBLIC_5XX[500]).format(op=operation_id), None
    return Response(envelope(exc.code, message, details), status, headers, MEDIA_TYPE)


def internal_response(operation_id: str = "-") -> Response:
    """A 500 ``internal`` for an unexpected exception (the caller logs the traceback)."""
    message = f"internal error; logged with operation id {operation_id}"
    return Response(envelope("internal", message), 500, media_type=MEDIA_TYPE)


def http_error_response(status: int, detail: str, headers: dict[str, str] | None = None
                        ) -> Response:
    """Starlette's own errors (unknown route, wrong method) in the same envelope."""
    code = {404: "not_found", 401: "unauthorized", 403: "forbidden", 413: "too_large",
            429: "overloaded", 503: "unavailable"}.get(status)
    if code is None:
        code = "invalid_request" if status < 500 else "internal"
    log.info("operation -: %d %s: %s", status, code, detail)
    return Response(envelope(code, detail), status, headers, MEDIA_TYPE)
