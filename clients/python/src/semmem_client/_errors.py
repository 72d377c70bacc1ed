"""Errors, one class per code of the contract's error envelope ``{"error": {code, message,
details}}``, plus three of the client's own: no answer, an answer outside the contract, a
closed client.

    SemmemError                   .code .status .details
    ├── InvalidRequest            invalid_request        400
    │   ├── InvalidArguments      invalid_arguments      422
    │   └── DeadlineExceeded      deadline_exceeded      400
    ├── Unauthorized              unauthorized           401
    ├── Forbidden                 forbidden              403
    │   └── QuotaExceeded         quota_exceeded         403: the partition is full
    ├── NotFound                  not_found              404
    ├── RequestTimeout            request_timeout        408 (retried first)
    ├── Conflict                  conflict               409: recall again
    │   └── IdempotencyMismatch   idempotency_mismatch   409
    ├── TooLarge                  too_large              413
    ├── Overloaded                overloaded             429 (retried first)
    │   └── RateLimited           rate_limited           429 (retried first)
    ├── InternalError             internal               500 (retried first)
    ├── Unavailable               unavailable            503 (retried first)
    ├── TransportError            transport              no answer: refused, reset, timed out
    ├── ProtocolError             bad_response           an answer outside the contract
    └── ClientClosed              client_closed          a call after ``close()``
"""

from __future__ import annotations

from typing import Any, ClassVar


class SemmemError(Exception):
    """A refusal by the server (``code``, HTTP ``status``, ``details``) or a failed call."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str, *, status: int | None = None,
                 details: dict[str, Any] | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.details: dict[str, Any] = details or {}
        if code is not None and code != type(self).code:
            self.code = code  # type: ignore[misc]  # a code this client does not know yet

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status}, {self.message!r})"


class InvalidRequest(SemmemError):
    """The envelope or the body is malformed (a bug in the caller, or a version mismatch)."""

    code = "invalid_request"


class InvalidArguments(InvalidRequest):
    """Tool arguments fail the tool's schema; ``details`` names each argument and rule."""

    code = "invalid_arguments"


class DeadlineExceeded(InvalidRequest):
    """The deadline passed on arrival or before the commit: nothing was written."""

    code = "deadline_exceeded"


class Unauthorized(SemmemError):
    """Missing or wrong bearer token."""

    code = "unauthorized"


class Forbidden(SemmemError):
    """A write with read access, or an edit of an owner-curated record."""

    code = "forbidden"


class NotFound(SemmemError):
    """No such item number in the partition (or no such endpoint)."""

    code = "not_found"


class Conflict(SemmemError):
    """The item changed after the turn's recall: recall again, then retry."""

    code = "conflict"


class IdempotencyMismatch(Conflict):
    """An operation id was reused with a different tool, arguments or cursor."""

    code = "idempotency_mismatch"


class TooLarge(SemmemError):
    """The request body is over 64 KiB."""

    code = "too_large"


class Overloaded(SemmemError):
    """The server's concurrency limit was reached (and the retries too)."""

    code = "overloaded"


class RateLimited(Overloaded):
    """This token is over its request rate (``SEMMEM_RATE_LIMIT``); retried after
    ``Retry-After`` when it fits the deadline."""

    code = "rate_limited"


class QuotaExceeded(Forbidden):
    """The partition is at its item or byte quota: nothing was written (not retried; forget
    or shorten facts first). ``details`` has ``quota``, ``limit`` and ``usage``."""

    code = "quota_exceeded"


class RequestTimeout(SemmemError):
    """The request body did not arrive within the server's body timeout (408, retried)."""

    code = "request_timeout"


class InternalError(SemmemError):
    """An unexpected server failure, logged there with the operation id."""

    code = "internal"


class Unavailable(SemmemError):
    """The server is starting or its store/model cannot serve right now."""

    code = "unavailable"


class TransportError(SemmemError):
    """No answer (connection refused or reset, timed out; the deadline ending an attempt too)
    after the retries the deadline allowed.

    A write may still have committed: retry with the same ``operation_id`` to learn its result.
    """

    code = "transport"


class ProtocolError(SemmemError):
    """An answer that is not the contract's: not JSON, or an error without the envelope."""

    code = "bad_response"


class ClientClosed(SemmemError):
    """A call on a client after its ``close()`` (or the end of its ``with`` block)."""

    code = "client_closed"


BY_CODE: dict[str, type[SemmemError]] = {
    cls.code: cls for cls in (
        InvalidRequest, InvalidArguments, DeadlineExceeded, Unauthorized, Forbidden, NotFound,
        Conflict, IdempotencyMismatch, TooLarge, Overloaded, InternalError, Unavailable,
        RateLimited, QuotaExceeded, RequestTimeout,
    )
}
"""The classes of the codes a server answers with, by code."""


def from_envelope(status: int, body: Any) -> SemmemError:
    """The exception for an error answer: by its envelope's code, else a ``ProtocolError``."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return ProtocolError(f"HTTP {status} without the error envelope", status=status)
    code: str = error["code"]
    message = error.get("message")
    details = error.get("details")
    cls = BY_CODE.get(code, SemmemError)
    return cls(message if isinstance(message, str) else code, status=status,
               details=details if isinstance(details, dict) else None, code=code)
