"""Ingestion (``POST /ingest``): a session's messages as the server takes them, and its
answer; sessions as the admin API lists them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict, cast

from semmem_client._errors import ProtocolError
from semmem_client._wire import PROTOCOL_VERSION, deadline_at, operation_id

INGEST_PATH = "/ingest"
# A session's ingestion embeds every new piece before it answers: longer than a recall.
DEFAULT_INGEST_DEADLINE_S = 120.0


class Message(TypedDict):
    """One message of a conversation: who said it, what (blank or ``None``: a turn with no
    text, such as one that only called a tool, which stores nothing), and when (ISO 8601 or a
    datetime; absent: when the server receives it)."""

    role: str
    content: str | None
    at: NotRequired[str]


class IngestResult(TypedDict):
    """What ``ingest`` answers: each message's piece numbers (in the order sent; a message
    the session already held answers its own, one with no text ``[]``) and the partition's
    live count."""

    status: Literal["stored", "accepted"]
    sessionId: str
    items: list[list[int]]
    count: int


class SessionSummary(TypedDict):
    """One session of a partition, as ``sessions`` lists it."""

    sessionId: str
    messages: int
    pieces: int
    firstAt: str | None
    lastAt: str | None


def _at(value: Any) -> Any:
    if isinstance(value, datetime):
        at = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        at = at.astimezone(UTC)
        return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    return value


def messages_of(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent: ``role``, ``content`` and ``at`` (a datetime as ISO 8601 UTC)."""
    out = []
    for m in messages:
        sent = {k: v for k, v in m.items() if k in ("role", "content") or
                (k == "at" and v is not None)}
        if "at" in sent:
            sent["at"] = _at(sent["at"])
        out.append(sent)
    if not out:
        raise ValueError("ingest needs at least one message")
    return out


def ingest_body(partition: str, session_id: str, messages: Iterable[Mapping[str, Any]],
                op_id: str | None, deadline_s: float) -> dict[str, Any]:
    """A ``POST /ingest`` body."""
    return {"version": PROTOCOL_VERSION, "operationId": op_id or operation_id(),
            "partition": partition, "sessionId": session_id,
            "messages": messages_of(messages), "deadlineAt": deadline_at(deadline_s)}


def read_ingest(body: Any) -> IngestResult:
    """An ingestion answer."""
    if not (isinstance(body, dict) and isinstance(body.get("items"), list)
            and isinstance(body.get("count"), int)):
        raise ProtocolError("ingest answer without items and count", status=200)
    return cast(IngestResult, body)
