"""The v1 request envelope of the provider protocol, as typed request models.

``parse_envelope`` turns a decoded JSON body into a ``RecallRequest`` or a ``ToolRequest``; any
shape problem is an ``InvalidInput`` (400 ``invalid_request``). Unknown fields are ignored so a
host may add fields within version 1.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from semmem.contract import MAX_ID_BYTES, MAX_PARTITION_BYTES, MAX_RECALL_BYTES
from semmem.errors import InvalidInput
from semmem.items import TIME_RULE, parse_iso
from semmem.protocol.untrusted import loggable

PROTOCOL_VERSION = 1
# RFC 3339 date-time (ISO 8601 profile); a missing zone means UTC.
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?"
)


def _version(value: Any) -> int:
    # pydantic would take true or 1.0 for Literal[1]; the contract says the number 1.
    if type(value) is not int or value != PROTOCOL_VERSION:
        raise ValueError(f"version must be {PROTOCOL_VERSION}")
    return value


def _deadline(value: Any) -> int:
    if not isinstance(value, str) or not _DATETIME.fullmatch(value):
        raise ValueError("deadlineAt must be an ISO 8601 date-time, e.g. 2026-09-10T15:04:15.000Z")
    try:
        return parse_iso(value)
    except (ValueError, OverflowError):
        raise ValueError(f"deadlineAt must be {TIME_RULE}") from None


def _partition(value: str) -> str:
    if len(value.encode("utf-8", "surrogatepass")) > MAX_PARTITION_BYTES:
        raise ValueError(f"partition must be at most {MAX_PARTITION_BYTES} UTF-8 bytes")
    return value


def _cursor(value: str | None) -> str | None:
    if value is not None and len(value.encode("utf-8")) > MAX_ID_BYTES:
        raise ValueError(f"cursor must be at most {MAX_ID_BYTES} UTF-8 bytes")
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class Envelope(_Model):
    """Fields every operation carries."""

    version: Annotated[int, BeforeValidator(_version)]
    operation: Literal["recall", "tool"]
    operation_id: Annotated[str, Field(alias="operationId", min_length=1)]
    partition: Annotated[str, Field(min_length=1), AfterValidator(_partition)]
    access: Literal["read", "read-write"]
    deadline_ms: Annotated[int, BeforeValidator(_deadline), Field(alias="deadlineAt")]

    @property
    def writable(self) -> bool:
        """Whether the binding allows write tools."""
        return self.access == "read-write"


class RecallInput(_Model):
    """What the host tells recall about the current model request."""

    text: str | None


class RecallRequest(Envelope):
    """``operation: "recall"``."""

    operation: Literal["recall"]
    input: RecallInput
    max_bytes: Annotated[int, Field(alias="maxBytes", ge=1, le=MAX_RECALL_BYTES)]


class ToolRequest(Envelope):
    """``operation: "tool"``: arguments are checked later, against the tool's own schema."""

    operation: Literal["tool"]
    tool: Annotated[str, Field(min_length=1)]
    arguments: Any
    cursor: Annotated[str | None, AfterValidator(_cursor)] = None


def parse_envelope(body: Any) -> RecallRequest | ToolRequest:
    """Validate a decoded request body.

    Raises:
        InvalidInput: not an object, wrong version, unknown operation, missing/invalid fields.
    """
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object")
    operation = body.get("operation")
    model: type[Envelope] = (
        RecallRequest if operation == "recall" else ToolRequest if operation == "tool"
        else Envelope
    )
    try:
        request = model.model_validate(body)
    except ValidationError as exc:
        problems = [
            {"field": ".".join(str(p) for p in err["loc"]) or "(body)",
             "problem": _problem(err)}
            for err in exc.errors(include_url=False, include_input=False)
        ]
        first = problems[0]
        raise InvalidInput(
            f"invalid request envelope: {first['field']}: {first['problem']}",
            {"problems": problems},
        ) from None
    assert isinstance(request, RecallRequest | ToolRequest)
    return request


def _problem(err: Any) -> str:
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def operation_id_of(body: Any) -> str:
    """The operation id of a body that may not validate, for logging only (cut, and its
    control characters escaped: it is the caller's string)."""
    value = body.get("operationId") if isinstance(body, dict) else None
    return loggable(value) if isinstance(value, str) and value else "-"
