"""A message cut into pieces, and what each piece records about where it came from.

A piece is an ordinary numbered item (recall, search and forget treat it like any fact) whose
record fields say where it came from:

- ``keyed``: ``{"space": "session", "key": <sessionId>}`` (``semmem.keyed``: the session is
  the keyed item its pieces belong to);
- ``piece``: ``{"role", "at", "message", "part", "digest"}``: who said it, when (ISO 8601),
  the message's index in its session and the piece's index in its message (both from 0), and
  a keyed hash of the message (role and content: how a message sent twice is known).

``Item.piece`` (``semmem.items``) reads them back as ``{"session", "role", "at", "message",
"part"}``; an item's ``ts`` is its message's ``at``.

The cutter is deterministic: sentence boundaries (end punctuation followed by space, line
breaks), sentences packed into pieces of about ``TARGET_CHARS``, never over ``MAX_CHARS`` (a
longer sentence is cut at clause boundaries, then between words, then anywhere), and a short
last piece joined to the one before when both fit. Each piece is a slice of the message,
trimmed: no character is changed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import pairwise

from semmem.contract import check_role
from semmem.errors import InvalidArguments
from semmem.items import SPACE_CHARS, iso, parse_time, trim

PIECE = "piece"  # the record field
SESSION = "session"  # the keyed space of conversation sessions
ROLE, AT, MESSAGE, PART, DIGEST = "role", "at", "message", "part", "digest"
SHOWN = (ROLE, AT, MESSAGE, PART)  # what ``Item.piece`` shows beside the session

TARGET_CHARS = 220  # a 1 KB budget holds four pieces with their line heads, 2 KB eight
MAX_CHARS = 400
MIN_CHARS = 60  # a last piece shorter than this joins the one before, when both fit

# After end punctuation (and closing quotes or brackets) and whitespace, or at line breaks.
_SENTENCE = re.compile(r"(?<=[.!?\u2026\u3002\uff01\uff1f])[\"'\u201d\u2019)\]]*[ \t]+|\n+")
_CLAUSE = re.compile(r"(?<=[,;:])\s+|\s+(?=[-\u2013\u2014]\s)")
_WORD = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    """Characters ``start``–``end`` of a message."""

    start: int
    end: int

    @property
    def size(self) -> int:
        """How many characters it covers."""
        return self.end - self.start


def _cuts(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[int]:
    """Positions in ``text[start:end]`` right after each boundary ``pattern`` finds."""
    return [m.end() for m in pattern.finditer(text, start, end) if start < m.end() < end]


def _split_long(text: str, span: Span, limit: int) -> list[Span]:
    """``span`` cut into spans of at most ``limit`` characters: at the last clause boundary
    that fits, else the last word boundary, else at ``limit``."""
    out: list[Span] = []
    start = span.start
    while span.end - start > limit:
        cut = 0
        for pattern in (_CLAUSE, _WORD):
            fitting = [c for c in _cuts(text, start, start + limit + 1, pattern)
                       if c - start >= limit // 3]
            if fitting:
                cut = fitting[-1]
                break
        if not cut:
            cut = start + limit
        out.append(Span(start, cut))
        start = cut
    out.append(Span(start, span.end))
    return out


def sentences(text: str, limit: int = MAX_CHARS) -> list[Span]:
    """The message's sentences as spans, each at most ``limit`` characters."""
    bounds = [0, *_cuts(text, 0, len(text), _SENTENCE), len(text)]
    out: list[Span] = []
    for start, end in pairwise(bounds):
        if not trim(text[start:end]):
            continue
        out.extend(_split_long(text, Span(start, end), limit))
    return out


def cut(text: str, target: int = TARGET_CHARS, limit: int = MAX_CHARS,
        least: int = MIN_CHARS) -> list[str]:
    """``text`` cut into pieces on sentence boundaries (see the module): each a trimmed slice
    of ``text`` of at most ``limit`` characters, about ``target`` long; none blank."""
    spans = sentences(text, limit)
    total = sum(s.size for s in spans)
    if not spans:
        return []
    goal = total / max(1, math.ceil(total / target))  # pieces of even size, not one short one
    groups: list[Span] = []
    for span in spans:
        if groups:
            last = groups[-1]
            joined = span.end - last.start
            if joined <= limit and (last.size < goal and joined <= goal * 1.3):
                groups[-1] = Span(last.start, span.end)
                continue
        groups.append(span)
    if len(groups) > 1 and groups[-1].size < least \
            and groups[-1].end - groups[-2].start <= limit:
        groups[-2:] = [Span(groups[-2].start, groups[-1].end)]
    return [piece for g in groups if (piece := text[g.start:g.end].strip(SPACE_CHARS))]


def clean_piece(value: object) -> dict[str, object]:
    """A ``piece`` record field as stored (an import's).

    Raises:
        InvalidArguments: not ``{"role", "at", "message", "part", "digest"?}`` with a role
            by ``contract.check_role``, an ``at`` by ``items.parse_time``, whole numbers ≥ 0
            and a hex digest.
    """
    if not isinstance(value, dict) or not {ROLE, AT, MESSAGE, PART} <= set(value) \
            or not set(value) <= {ROLE, AT, MESSAGE, PART, DIGEST}:
        raise InvalidArguments(f"{PIECE} must be an object with {ROLE}, {AT}, {MESSAGE}, "
                               f"{PART} and optionally {DIGEST}")
    role = check_role(value[ROLE], f"{PIECE}.{ROLE}")
    at = iso(parse_time(value[AT], f"{PIECE}.{AT}"))
    out: dict[str, object] = {ROLE: role, AT: at}
    for name in (MESSAGE, PART):
        number = value[name]
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise InvalidArguments(f"{PIECE}.{name} must be a whole number ≥ 0")
        out[name] = number
    digest = value.get(DIGEST)
    if digest is not None:
        if not isinstance(digest, str) or not 1 <= len(digest) <= 64 \
                or any(c not in "0123456789abcdef" for c in digest):
            raise InvalidArguments(f"{PIECE}.{DIGEST} must be a hex string")
        out[DIGEST] = digest
    return out


def position(attrs: dict[str, object]) -> tuple[object, ...] | None:
    """Where a piece sits (its address, message and part), or ``None`` for a fact: two
    records with the same text and position are the same piece (an import given twice)."""
    keyed, piece = attrs.get("keyed"), attrs.get(PIECE)
    if not isinstance(keyed, dict) or not isinstance(piece, dict):
        return None
    return (keyed.get("space"), keyed.get("key"), piece.get(MESSAGE), piece.get(PART))
