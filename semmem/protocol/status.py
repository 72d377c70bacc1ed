"""The one table from error classes to status codes, and the error envelope built from it.

Both surfaces use it: the HTTP provider sends the status and the envelope, MCP puts the same
code and message in its error result. Nothing else decides what a refusal looks like.
"""

from __future__ import annotations

from typing import Any

from semmem.errors import (
    Conflict,
    DeadlineExceeded,
    Forbidden,
    IdempotencyMismatch,
    InvalidArguments,
    InvalidInput,
    NotFound,
    NotReady,
    Overloaded,
    QuotaExceeded,
    RateLimited,
    SemmemError,
    TooLarge,
    TooSlow,
    Unauthorized,
    Unavailable,
)
from semmem.protocol.jsonio import dumps

STATUS: dict[type[SemmemError], int] = {
    InvalidInput: 400,
    DeadlineExceeded: 400,
    Unauthorized: 401,
    Forbidden: 403,
    # A full partition does not empty itself in 250 ms: a status the host does not retry
    # (it retries 408, 429 and 5xx), the code says why (docs/operating.md).
    QuotaExceeded: 403,
    NotFound: 404,
    Conflict: 409,
    IdempotencyMismatch: 409,
    TooLarge: 413,
    TooSlow: 408,
    InvalidArguments: 422,
    Overloaded: 429,
    Unavailable: 503,
}
RETRY_AFTER_S: dict[type[SemmemError], int] = {Overloaded: 1, Unavailable: 2}
# What a caller reads for a server-side failure; the real message (engine errors, paths, store
# URIs) goes to the log only, since error messages reach the model unchanged.
PUBLIC_5XX = {
    500: "internal error; logged with operation id {op}",
    503: "memory is unavailable right now; retry shortly (logged with operation id {op})",
}


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


def public(exc: SemmemError, operation_id: str) -> tuple[str, dict[str, Any] | None]:
    """The message and details a caller may read: a server-side failure's real message
    (engine errors, paths, store URIs) goes to the log only, since messages reach the model."""
    status = status_of(exc)
    if status >= 500 and not isinstance(exc, NotReady):
        return PUBLIC_5XX.get(status, PUBLIC_5XX[500]).format(op=operation_id), None
    return exc.message, exc.details


def retry_after(exc: SemmemError) -> int | None:
    """Seconds a caller should wait before retrying, for refusals that pass."""
    if isinstance(exc, RateLimited):
        return exc.wait_s
    for cls in type(exc).__mro__:
        if cls in RETRY_AFTER_S:
            return RETRY_AFTER_S[cls]
    return None
