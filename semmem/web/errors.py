"""HTTP error responses: the status table's envelope as a Starlette response.

Nothing else in semmem builds an error response: routes raise ``SemmemError`` subclasses (or
let anything else escape, which becomes a logged 500 ``internal`` without a stack trace).
"""

from __future__ import annotations

import logging

from starlette.responses import Response

from semmem import tracing
from semmem.errors import SemmemError
from semmem.protocol.status import PUBLIC_5XX, envelope, public, retry_after, status_of
from semmem.protocol.untrusted import loggable

log = logging.getLogger("semmem.web")
MEDIA_TYPE = "application/json"


def error_response(exc: SemmemError, operation_id: str = "-", *, quiet: bool = False
                   ) -> Response:
    """The response for a domain error, logged with the operation id (unless ``quiet``)."""
    status = status_of(exc)
    headers: dict[str, str] = {}
    wait = retry_after(exc)
    if wait is not None:
        headers["Retry-After"] = str(wait)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="semmem"'
    log.log(
        logging.DEBUG if quiet else logging.WARNING if status >= 500 else logging.INFO,
        "operation %s: %d %s: %s", loggable(operation_id), status, exc.code,
        loggable(exc.message, 1000),
    )
    message, details = public(exc, operation_id)
    return Response(envelope(exc.code, message, details), status, headers, MEDIA_TYPE)


def internal_response(operation_id: str = "-") -> Response:
    """A 500 ``internal`` for an unexpected exception (the caller logs the traceback)."""
    message = PUBLIC_5XX[500].format(op=operation_id)
    return Response(envelope("internal", message), 500, media_type=MEDIA_TYPE)


def failed_response(exc: Exception, span: tracing.Span, operation_id: str = "-") -> Response:
    """The response for whatever ended a served operation, its span marked failed: a domain
    error's envelope, or a logged 500 ``internal`` (call it inside the ``except``: the
    traceback is logged from there)."""
    if isinstance(exc, SemmemError):
        span.fail(exc.code)
        return error_response(exc, operation_id)
    span.fail("internal")
    log.exception("operation %s: internal error", operation_id)
    return internal_response(operation_id)


def http_error_response(status: int, detail: str, headers: dict[str, str] | None = None
                        ) -> Response:
    """Starlette's own errors (unknown route, wrong method) in the same envelope."""
    code = {404: "not_found", 401: "unauthorized", 403: "forbidden", 413: "too_large",
            429: "overloaded", 503: "unavailable"}.get(status)
    if code is None:
        code = "invalid_request" if status < 500 else "internal"
    log.info("operation -: %d %s: %s", status, code, loggable(detail))
    return Response(envelope(code, detail), status, headers, MEDIA_TYPE)
