"""Items: the numbered facts of a partition, their text rules and wire formats.

Beside them, the rules every floor above reads an item by: ``metadata`` (a fact's metadata, its
rules and index tags), ``filters`` (``Filter``: a test on an item and the same test as a filter
expression), ``address`` (a keyed item's ``Address`` and the row tags the store derives).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from semmem.audience import Audience, audience_of
from semmem.contract import MAX_TEXT_CHARS
from semmem.errors import InvalidArguments
from semmem.items.metadata import METADATA, clean_metadata

# Embeddings, one float32 row per text or item (L2-normalised where a model made them).
Vectors = npt.NDArray[np.float32]

MAX_NOTE_CHARS = 500
RECORD_FIELDS = ("note", "status", "surfacing", "mergedInto", "slug", "expiresAt", METADATA)
EXPIRES = "expiresAt"  # a fact's own end (ISO 8601): see semmem/lifecycle/retention.py
_SPACE = re.compile(r"\s+")

# Whitespace as ECMA-262's \s (WhiteSpace and LineTerminator): what a host's JSON Schema
# check means by it, and what trimming removes here. Python's own str.strip() differs (it
# strips U+001C–U+001F and U+0085, keeps U+FEFF), so the server would refuse texts the
# declared schema accepts.
SPACE_CLASS = ("\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f"
               "\\u3000\\ufeff")
SPACE_CHARS = ("\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
               + "\u2028\u2029\u202f\u205f\u3000\ufeff")
# An item text as a pattern both engines read alike (ECMA-262 in Unicode mode, Python's re):
# 1 to MAX_TEXT_CHARS characters after trimming SPACE_CHARS, none of them NUL.
_EDGE = f"[^{SPACE_CLASS}\\u0000]"  # a first or last character
TEXT_PATTERN = (f"^[{SPACE_CLASS}]*{_EDGE}(?:[^\\u0000]{{0,{MAX_TEXT_CHARS - 2}}}{_EDGE})?"
                f"[{SPACE_CLASS}]*$")
# Some character that is not whitespace (a search query).
NON_BLANK_PATTERN = f"[^{SPACE_CLASS}]"


def now_ms() -> int:
    """Current UTC time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


# The times semmem takes and stores: years 1 to 9999 in UTC, what ISO 8601's four-digit
# years hold (and what ``iso`` renders and ``parse_iso`` reads back exactly).
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
MIN_MS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MS
MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) // _MS
TIME_RULE = ("an ISO 8601 date-time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, such as "
             "2026-09-10T15:04:15Z")


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC with a ``Z`` suffix and millisecond precision (four
    digits of year). A computed time past the range (a far date plus a retention) renders as
    the range's end, never raises."""
    dt = _EPOCH + min(max(ms, MIN_MS), MAX_MS) * _MS
    return (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:"
            f"{dt.second:02d}.{dt.microsecond // 1000:03d}Z")


def parse_iso(value: str) -> int:
    """ISO 8601 (``Z`` or offset; naive means UTC) to epoch milliseconds, exactly (a part of
    a millisecond dropped): the one rule for every time a caller gives (``parse_time``) and
    every one stored.

    Raises:
        ValueError: not an ISO 8601 date-time, or outside years 1 to 9999 in UTC (so
            "0001-01-01T00:00:00+01:00", in year 0 in UTC, is refused here, not in a write).
    """
    dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    ms = (dt - _EPOCH) // _MS
    if not MIN_MS <= ms <= MAX_MS:
        raise ValueError(f"{value[:40]!r} is outside years 1 to 9999 in UTC")
    return ms


def parse_time(value: object, what: str) -> int:
    """A time a caller gives (``what`` names it in the refusal), as epoch milliseconds.

    Raises:
        InvalidArguments: not a string holding ``TIME_RULE``.
    """
    try:
        if isinstance(value, str):
            return parse_iso(value)
    except (ValueError, OverflowError):
        pass
    raise InvalidArguments(f"{what} must be {TIME_RULE}")


def check_ms(ms: int, what: str) -> int:
    """A time a caller gives as epoch milliseconds (an import's), within ``parse_iso``'s range.

    Raises:
        InvalidArguments: outside years 1 to 9999 in UTC.
    """
    if not MIN_MS <= ms <= MAX_MS:
        raise InvalidArguments(f"{what} must be epoch milliseconds from {MIN_MS} to {MAX_MS} "
                               "(years 1 to 9999 in UTC)")
    return ms


def trim(text: str) -> str:
    """``text`` without surrounding whitespace (ECMA-262's, as the declared schema means)."""
    return text.strip(SPACE_CHARS)


def clean_text(text: object) -> str:
    """Validate an item text: a string of 1–2,000 characters after trimming (exactly what
    ``TEXT_PATTERN`` accepts), valid Unicode.

    Returns:
        The text, trimmed of surrounding whitespace (inner text is kept exactly).
    Raises:
        InvalidArguments: not a string, empty/blank, too long, NUL, or not valid Unicode.
    """
    if not isinstance(text, str):
        raise InvalidArguments("text must be a string")
    trimmed = trim(text)
    if not trimmed:
        raise InvalidArguments("text must not be empty or blank")
    if len(trimmed) > MAX_TEXT_CHARS:
        raise InvalidArguments(
            f"text is {len(trimmed)} characters; at most {MAX_TEXT_CHARS} are allowed",
            {"maxLength": MAX_TEXT_CHARS},
        )
    try:
        trimmed.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArguments("text is not valid Unicode (lone surrogate)") from exc
    if "\x00" in trimmed:
        raise InvalidArguments("text must not contain NUL characters")
    return trimmed


def clean_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """Validate owner record fields; ``None`` values mean "clear this field".

    Raises:
        InvalidArguments: an unknown field, a non-string note/status/surfacing/slug, a note
            over 500 characters, an ``expiresAt`` that is not ISO 8601, or metadata that
            breaks ``semmem.items.metadata``'s rules (``{}`` clears it, as ``None`` does).
    """
    out: dict[str, Any] = {}
    for key, value in attrs.items():
        if key not in RECORD_FIELDS:
            known = ", ".join(RECORD_FIELDS)
            raise InvalidArguments(f"unknown record field {key!r}; known: {known}")
        if key == "mergedInto" and isinstance(value, float) and not math.isfinite(value):
            # stored as it came, an Infinity fails every later strict write (search, export)
            raise InvalidArguments("mergedInto must be a finite number")
        if value is None or key == "mergedInto":
            out[key] = value
            continue
        if key == EXPIRES:
            out[key] = _expiry(value)
            continue
        if key == METADATA:
            out[key] = clean_metadata(value)
            continue
        if not isinstance(value, str):
            raise InvalidArguments(f"{key} must be a string")
        if key == "note" and len(value.strip()) > MAX_NOTE_CHARS:
            raise InvalidArguments(f"note is over {MAX_NOTE_CHARS} characters")
        out[key] = value.strip() if key == "note" else value
    return out


def _expiry(value: Any) -> str:
    """An ``expiresAt`` as stored: ISO 8601 UTC with milliseconds."""
    return iso(parse_time(value, EXPIRES))


def future_expiry(attrs: dict[str, Any]) -> None:
    """Refuse a new fact's ``expiresAt`` (as ``clean_attrs`` stores it) that is not after
    now: it would be stored already expired, hidden from every read yet kept until a sweep.

    Raises:
        InvalidArguments: the expiry has passed.
    """
    value = attrs.get(EXPIRES)
    if isinstance(value, str) and parse_iso(value) <= now_ms():
        raise InvalidArguments(f"{EXPIRES} {value} has passed: a fact's expiry must be in "
                               "the future")


def dedupe_key(text: str) -> str:
    """The identity used for duplicate detection: trimmed, whitespace collapsed, case-folded."""
    return _SPACE.sub(" ", text.strip()).casefold()


# Every character ``str.splitlines`` ends a line at: a fact holding any of them (U+2028, NEL,
# a form feed…) would otherwise render as two lines, the second forging a numbered one.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = re.compile(f"[{LINE_BREAKS}]")


def one_line(text: str) -> str:
    """The text as one line: each line break (``\r\n`` too) becomes a space."""
    if text.isascii():  # the common case, checked as fast as the old "\n"/"\r" test was
        broken = ("\n" in text or "\r" in text or "\v" in text or "\f" in text
                  or "\x1c" in text or "\x1d" in text or "\x1e" in text)
    else:
        broken = _BREAK.search(text) is not None
    return " ".join(text.splitlines()) if broken else text


@dataclass(frozen=True)
class Item:
    """One remembered fact."""

    n: int
    text: str
    ts: int
    updated: int
    revision: int
    seq: int
    model: str
    attrs: dict[str, Any] = field(default_factory=dict)
    # The write sequence that created the item, where recorded (items written before it was
    # recorded and changed since do not know it).
    created: int | None = None

    @property
    def born(self) -> int | None:
        """The write sequence that created the item, if known (a first revision's own)."""
        if self.created is not None:
            return self.created
        return self.seq if self.revision == 1 else None

    @property
    def surfaced(self) -> bool:
        """Whether recall may show the item: not inactive, not on hold, not merged away, not a
        piece of an application's store item (``semmem.stored``: the model's tools never see
        or edit those)."""
        if not self.attrs:  # most items, a plain fact: decided without a lookup (per candidate)
            return True
        if self.application:
            return False
        status = self.attrs.get("status")
        if status is not None and str(status).strip().casefold() != "active":
            return False
        if str(self.attrs.get("surfacing", "")).strip().casefold() == "hold":
            return False
        return "mergedInto" not in self.attrs

    @property
    def application(self) -> bool:
        """Whether the item is not the model's (an application's store item's piece, or a
        system record: ``semmem.audience``): no model-facing read shows it, whatever its other
        fields."""
        return audience_of(self.attrs) is not Audience.MODEL

    @property
    def metadata(self) -> dict[str, Any]:
        """The fact's metadata (empty when it has none)."""
        found = self.attrs.get(METADATA)
        return found if isinstance(found, dict) else {}

    @property
    def piece(self) -> dict[str, Any] | None:
        """A conversation piece's place: ``{"session", "role", "at", "message", "part"}``
        (``None``: not a piece); the fields are ``semmem.conversations.pieces``'."""
        found, keyed = self.attrs.get("piece"), self.attrs.get("keyed")
        if not isinstance(found, dict) or not isinstance(keyed, dict) \
                or keyed.get("space") != "session":
            return None
        return {"session": keyed.get("key"), "role": found.get("role"), "at": found.get("at"),
                "message": found.get("message"), "part": found.get("part")}

    @property
    def updated_at(self) -> str:
        """Last change as ISO 8601."""
        return iso(self.updated)

    def public(self) -> dict[str, Any]:
        """The item as exported (JSONL) and shown to owners."""
        out: dict[str, Any] = {
            "n": self.n,
            "text": self.text,
            "ts": iso(self.ts),
            "updated": iso(self.updated),
            "revision": self.revision,
        }
        out.update(self.attrs)
        return out
