"""An ingestion request: a session's messages, checked, as the core takes them.

Wire body (``POST /ingest``; the CLI and the client send the same)::

    {"version": 1, "operationId": "…", "partition": "…", "sessionId": "…",
     "messages": [{"role": "user", "content": "…", "at": "2023-05-20T10:00:00Z"}, …],
     "deadlineAt"?: ISO 8601, "access"?: "read" | "read-write"}

Envelope problems are ``InvalidInput`` (400), a message's are ``InvalidArguments`` (422, with
the message's index in ``details``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from semmem.contract import MAX_ID_BYTES, check_partition, check_role
from semmem.contract import MAX_ROLE_CHARS as MAX_ROLE_CHARS  # the schema's (web/openapi.py)
from semmem.conversations.pieces import SESSION
from semmem.errors import InvalidArguments, InvalidInput
from semmem.items import iso, now_ms, parse_time, trim
from semmem.items.address import Address

VERSION = 1
MAX_MESSAGES = 10_000  # per request


@dataclass(frozen=True)
class Message:
    """One message as stored: its role, its content (trimmed) and when it was said (epoch
    ms; the request's time when the caller gave none)."""

    role: str
    content: str
    at: int

    @property
    def at_iso(self) -> str:
        """``at`` as ISO 8601."""
        return iso(self.at)


@dataclass(frozen=True)
class IngestRequest:
    """A checked ingestion request."""

    operation_id: str
    partition: str
    session: Address
    messages: tuple[Message, ...]
    deadline_ms: int | None = None
    read_only: bool = False
    # What the operation's fingerprint covers: the session and the messages as sent (an
    # ``at`` left out stays left out, so a retry fingerprints the same).
    arguments: Any = None

    @property
    def session_id(self) -> str:
        """The caller's session id."""
        return self.session.key


def _text(value: Any, what: str, index: int | None = None) -> str:
    where = {"message": index} if index is not None else None
    if not isinstance(value, str):
        raise InvalidArguments(f"{what} must be a string", where)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArguments(f"{what} is not valid Unicode (lone surrogate)", where) from None
    if "\x00" in value:
        raise InvalidArguments(f"{what} must not contain NUL characters", where)
    return value


def message(raw: Any, index: int, now: int) -> Message:
    """One message of a request.

    Raises:
        InvalidArguments: not ``{"role", "content", "at"?}``; a role that breaks
            ``contract.check_role`` (1-64 characters, no control, line-separator or
            bidirectional formatting character, no bracket), a content missing or neither text
            nor null, an ``at`` not ISO 8601 or outside years 1 to 9999
            (``items.parse_time``). (A blank or null content is a message with nothing to
            store.)
    """
    where = {"message": index}
    if not isinstance(raw, dict):
        raise InvalidArguments(f"messages[{index}] must be an object", where)
    unknown = [k for k in raw if k not in ("role", "content", "at")]
    if unknown:
        raise InvalidArguments(f"messages[{index}] has an unknown field {str(unknown[0])[:40]!r};"
                               " known: role, content, at", where)
    role = trim(_text(raw.get("role"), f"messages[{index}].role", index))
    try:
        check_role(role, f"messages[{index}].role")
    except InvalidArguments as exc:
        raise InvalidArguments(exc.message, where) from None
    # A message with no text (an assistant turn that only called a tool: blank, or null as
    # chat exports write it) is taken and stores nothing: a conversation that holds one
    # is not refused for it.
    if "content" not in raw:
        raise InvalidArguments(f"messages[{index}].content is required (null or text)", where)
    raw_content = raw["content"]
    content = "" if raw_content is None else \
        trim(_text(raw_content, f"messages[{index}].content", index))
    at = raw.get("at")
    if at is None:
        return Message(role, content, now)
    try:
        return Message(role, content, parse_time(at, f"messages[{index}].at"))
    except InvalidArguments as exc:
        raise InvalidArguments(exc.message, where) from None


def parse_request(body: Any) -> IngestRequest:
    """A decoded ``POST /ingest`` body, checked.

    Raises:
        InvalidInput: not an object, wrong version, a missing or invalid envelope field.
        InvalidArguments: a message that breaks ``message``'s rules, or none at all.
    """
    if not isinstance(body, dict):
        raise InvalidInput("the request body must be a JSON object")
    version = body.get("version")
    if type(version) is not int or version != VERSION:
        raise InvalidInput(f"version must be {VERSION}")
    op = body.get("operationId")
    if not isinstance(op, str) or not op or len(op.encode("utf-8", "replace")) > MAX_ID_BYTES:
        raise InvalidInput(f"operationId must be a string of 1-{MAX_ID_BYTES} UTF-8 bytes")
    partition = body.get("partition")
    if not isinstance(partition, str) or not partition:
        raise InvalidInput("partition must be a non-empty string")
    check_partition(partition)
    try:
        session = Address.of(SESSION, body.get("sessionId"))
    except InvalidArguments as exc:
        raise InvalidInput(exc.message.replace("key", "sessionId", 1)) from None
    access = body.get("access", "read-write")
    if access not in ("read", "read-write"):
        raise InvalidInput("access must be 'read' or 'read-write'")
    deadline = body.get("deadlineAt")
    deadline_ms = None
    if deadline is not None:
        try:
            deadline_ms = parse_time(deadline, "deadlineAt")
        except InvalidArguments as exc:
            raise InvalidInput(exc.message) from None
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise InvalidInput("messages must be a non-empty array")
    if len(raw) > MAX_MESSAGES:
        raise InvalidInput(f"at most {MAX_MESSAGES} messages per request",
                           {"maxItems": MAX_MESSAGES})
    now = now_ms()
    return IngestRequest(op, partition, session,
                         tuple(message(m, i, now) for i, m in enumerate(raw)),
                         deadline_ms, access == "read",
                         {"sessionId": session.key, "messages": raw})
