"""Domain errors of semmem.

Every error carries the protocol error ``code`` of the HTTP contract; ``semmem.protocol.status``
maps each class to a status in one table, the CLI prints the message.

    SemmemError
    ├── InvalidInput          code invalid_request
    │   ├── InvalidArguments  code invalid_arguments
    │   ├── UnknownTool       (no tool of that name)
    │   └── DeadlineExceeded  code deadline_exceeded
    ├── Unauthorized          code unauthorized
    ├── Forbidden             code forbidden
    ├── QuotaExceeded         code quota_exceeded (the partition is full: not retried)
    ├── NotFound              code not_found
    ├── Conflict              code conflict
    │   └── IdempotencyMismatch  code idempotency_mismatch
    ├── TooLarge              code too_large
    ├── TooSlow               code request_timeout
    ├── Overloaded            code overloaded
    │   └── RateLimited       code rate_limited (one token over its rate)
    └── Unavailable           code unavailable
        ├── NotReady          (the server itself is still loading, or failed to)
        ├── ModelError        (model files missing or altered)
        ├── ModelMismatch     (store written by another model)
        └── StoreChanged      (a reindex, restore or upgrade since this process opened it)
"""

from __future__ import annotations

from typing import Any, ClassVar


class SemmemError(Exception):
    """Base class of every error semmem raises on purpose."""

    code: ClassVar[str] = "internal"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(SemmemError):
    """The request or an argument is malformed."""

    code = "invalid_request"


class UnknownTool(InvalidInput):
    """No tool of the name called; the message lists the tools."""


class InvalidArguments(InvalidInput):
    """Tool arguments do not satisfy the tool's schema or the item rules."""

    code = "invalid_arguments"


class DeadlineExceeded(InvalidInput):
    """The operation's deadline passed before it could be (safely) carried out."""

    code = "deadline_exceeded"


class Unauthorized(SemmemError):
    """Missing or wrong credentials."""

    code = "unauthorized"


class Forbidden(SemmemError):
    """The caller's access level does not allow the operation."""

    code = "forbidden"


class QuotaExceeded(SemmemError):
    """A write would take its partition past ``SEMMEM_PARTITION_MAX_ITEMS`` or
    ``SEMMEM_PARTITION_MAX_BYTES``; retrying does not help, forgetting facts does."""

    code = "quota_exceeded"


class NotFound(SemmemError):
    """The item number does not exist in the partition."""

    code = "not_found"


class Conflict(SemmemError):
    """The target changed after the caller's cursor: recall again."""

    code = "conflict"


class IdempotencyMismatch(Conflict):
    """An operation id was reused with a different tool, arguments or cursor."""

    code = "idempotency_mismatch"


class TooLarge(SemmemError):
    """A request body, a request head or a value exceeds a size limit."""

    code = "too_large"


class TooSlow(SemmemError):
    """The request (its head or its body) did not arrive within the server's deadline."""

    code = "request_timeout"


class Overloaded(SemmemError):
    """Too much concurrent work: retry later."""

    code = "overloaded"


class RateLimited(Overloaded):
    """One token's requests came faster than ``SEMMEM_RATE_LIMIT``: retry after ``wait_s``."""

    code = "rate_limited"

    def __init__(self, message: str, details: dict[str, Any] | None = None, *,
                 wait_s: int = 1) -> None:
        super().__init__(message, details)
        self.wait_s = wait_s


class Unavailable(SemmemError):
    """The store or the model is not ready or cannot serve right now."""

    code = "unavailable"


class NotReady(Unavailable):
    """The server itself is not ready (still loading, or loading failed); its message is
    public, unlike other server-side failures'."""


class ModelError(Unavailable):
    """The bundled model's files are missing or do not match the manifest."""


class ModelMismatch(Unavailable):
    """The store was embedded with another model; `semmem reindex` migrates it."""

    @classmethod
    def between(cls, where: str, stored: object, model: str) -> ModelMismatch:
        """The refusal of ``where`` (a store, a partition), embedded with ``stored`` where
        ``model`` is configured: both ways out in one line, every surface the same words."""
        name = str(stored).partition("@")[0]  # a model id is <folder name>@<files' hash>
        return cls(
            f"{where} was embedded with model {stored!r}, not {model!r} (the model configured "
            f"here); either serve it with its own model (set SEMMEM_MODEL to that model's "
            f"folder, e.g. SEMMEM_MODEL=models/{name}), or move it to this model with "
            f"`semmem reindex` (the servers serving it stop once it begins; it re-embeds every "
            f"stored text, about as long as importing them again)",
            {"store_model": stored, "model": model},
        )


class StoreChanged(Unavailable):
    """The store was changed store-wide (its identity record moved: ``store/identity.py``)
    since this process opened it: it writes no more to it and stops."""

