"""The contract's v1 bodies as the host sends them, and its answers as this client reads them."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NotRequired, TypedDict, cast

from semmem_client._errors import ProtocolError, SemmemError, TransportError, from_envelope

PROTOCOL_VERSION = 1
MAX_BODY_BYTES = 64 * 1024
Access = Literal["read", "read-write"]
_NUMBER = re.compile(r"[1-9][0-9]{0,17}")


class Source(TypedDict):
    """One recalled fact: ``id`` is its number (the wire's string, read as the int that
    ``update`` and ``forget`` take)."""

    id: int
    title: NotRequired[str]
    revision: NotRequired[str]
    updatedAt: NotRequired[str]


class Similar(TypedDict):
    """A fact a write probably restates or supersedes."""

    n: int
    text: str
    score: float


class WriteResult(TypedDict):
    """What ``remember``, ``update`` and ``forget`` answer."""

    status: Literal["stored", "accepted"]
    n: int
    count: int
    existing: NotRequired[bool]
    forgotten: NotRequired[bool]
    similar: NotRequired[list[Similar]]


class Found(TypedDict):
    """One ``search`` hit (owners' record fields may follow; a conversation's piece carries
    its ``sessionId``, ``role`` and ``at``)."""

    n: int
    text: str
    score: float
    updatedAt: str
    metadata: NotRequired[dict[str, Any]]
    sessionId: NotRequired[str]
    role: NotRequired[str]
    at: NotRequired[str]


class SearchResult(TypedDict):
    """What ``search`` answers; ``truncated`` when cut to fit 64 KiB."""

    items: list[Found]
    count: int
    truncated: NotRequired[bool]


class Item(TypedDict):
    """A live fact as owners see it (admin API): ISO 8601 ``ts``/``updated``, and the record
    fields it has (``note``, ``status``, ``surfacing``, ``mergedInto``, ``slug``,
    ``expiresAt``, ``metadata``)."""

    n: int
    text: str
    ts: str
    updated: str
    revision: int
    note: NotRequired[str]
    status: NotRequired[str]
    surfacing: NotRequired[str]
    mergedInto: NotRequired[Any]
    slug: NotRequired[str]
    expiresAt: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


class ItemsPage(TypedDict):
    """One page of a partition's items, in number order; ``next`` is the next page's offset
    (``None`` on the last)."""

    items: list[Item]
    count: int
    next: int | None


class Forgotten(TypedDict):
    """What ``forget_matching`` answers: the numbers forgotten and how many."""

    status: Literal["stored"]
    forgotten: list[int]
    count: int


class PartitionsPage(TypedDict):
    """One page of the partition names, sorted; ``next`` as for ``ItemsPage``."""

    partitions: list[str]
    total: int
    next: int | None


@dataclass(frozen=True)
class Recall:
    """A recall: the text for the instructions, one source per line, the state it read."""

    text: str
    sources: list[Source] = field(default_factory=list)
    cursor: str | None = None


def operation_id() -> str:
    """A fresh operation id (one per logical call; its retries reuse it)."""
    return f"py-{uuid.uuid4().hex}"


def deadline_at(seconds: float) -> str:
    """ISO 8601 UTC instant ``seconds`` from now, to the millisecond."""
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def envelope(operation: str, op_id: str | None, partition: str, access: Access,
             deadline_s: float, **fields: Any) -> dict[str, Any]:
    """A v1 request body."""
    return {"version": PROTOCOL_VERSION, "operation": operation,
            "operationId": op_id or operation_id(), "partition": partition, "access": access,
            "deadlineAt": deadline_at(deadline_s), **fields}


def encode(body: dict[str, Any]) -> bytes:
    """The body's bytes, sent unchanged by every attempt."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def read_answer(status: int, content: bytes, limit: int | None = MAX_BODY_BYTES) -> Any:
    """The decoded 200 body, or raise the error the answer carries.

    Raises:
        SemmemError: the envelope's class for an error status; ``ProtocolError`` for a body
            that is not JSON, over ``limit`` (the contract's 64 KiB), or an error without the
            envelope.
    """
    if limit is not None and len(content) > limit:
        raise ProtocolError(f"answer of {len(content)} bytes is over the 64 KiB limit",
                            status=status)
    try:
        body = json.loads(content)
    except ValueError:
        body = None
        if status == 200:
            raise ProtocolError("answer is not JSON", status=status) from None
    if status != 200:
        raise from_envelope(status, body)
    return body


def read_recall(body: Any) -> Recall:
    """A recall answer as a ``Recall``."""
    if not (isinstance(body, dict) and isinstance(body.get("text"), str)
            and isinstance(body.get("sources"), list)):
        raise ProtocolError("recall answer without text and sources", status=200)
    cursor = body.get("cursor")
    return Recall(body["text"], [_source(s) for s in body["sources"]],
                  cursor if isinstance(cursor, str) else None)


def _source(source: Any) -> Source:
    number = source.get("id") if isinstance(source, dict) else None
    if not (isinstance(number, str) and _NUMBER.fullmatch(number)):
        raise ProtocolError("recall source without a fact number as its id", status=200)
    return cast(Source, {**source, "id": int(number)})


def read_facts(status: int, content: bytes) -> list[Any]:
    """A 200 JSONL export as its facts' records (its ledger lines, what the store forgot as
    hashes for ``semmem import``, are not facts), or raise the error the answer carries."""
    if status != 200:
        read_answer(status, content, None)
    try:
        lines = [json.loads(line) for line in content.splitlines() if line.strip()]
    except ValueError:
        raise ProtocolError("answer is not JSON lines", status=status) from None
    return [r for r in lines if not (isinstance(r, dict) and ("ledger" in r or "digestKeys" in r))]


def read_result(body: Any) -> Any:
    """A tool answer's ``result``, as the server sent it."""
    if not (isinstance(body, dict) and isinstance(body.get("result"), dict)):
        raise ProtocolError("tool answer without a result object", status=200)
    return body["result"]


def transport_error(exc: Exception) -> SemmemError:
    """A failure that got no answer, named by what failed."""
    return TransportError(f"no answer: {type(exc).__name__}: {exc}")
