"""The provider protocol's JSON codec: strict on the way in, deterministic on the way out."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar

from semmem.errors import InvalidInput

T = TypeVar("T")
CHUNK = 256  # records a streamed JSONL chunk holds (an export's: a few milliseconds of work)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)  # in C: a body of thousands of keys costs no Python loop unless refused
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                # Two "partition" keys could be read differently by the host and by us.
                raise InvalidInput(f"duplicate key {_short(key)} in the JSON body")
            seen.add(key)
    return obj


def _short(value: str, limit: int = 40) -> str:
    """A caller's string for a message: quoted and cut, so logs never carry a whole value."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


def _no_constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not JSON")


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent, refused where it overflows (``1e309``):
    an infinity would be stored as it came, and every later strict write of it fails."""
    value = float(text)
    if not math.isfinite(value):
        raise InvalidInput(f"the number {_short(text)} is out of range: numbers must be finite")
    return value


def check_values(value: Any, error: type[InvalidInput] = InvalidInput) -> None:
    """Refuse what ``loads`` refuses in a value parsed by someone else (the MCP SDK's JSON
    reader lets ``NaN``, ``Infinity`` and ``1e309`` through): non-finite numbers and strings
    that are not valid Unicode (a lone surrogate escape, ``"\\ud800"``: it can be neither
    stored nor embedded). Iterative, so a deep value cannot exhaust the stack.

    Raises:
        InvalidInput: as ``error`` (``InvalidArguments`` for a tool's arguments).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise error("a string is not valid Unicode (a lone surrogate escape)") from None
        elif isinstance(item, float) and not math.isfinite(item):
            raise error("a number is out of range (NaN or infinite): numbers must be finite")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def loads(body: bytes) -> Any:
    """Parse a request body: UTF-8 JSON, no duplicate keys, finite numbers (no NaN/Infinity,
    no ``1e309``), valid Unicode.

    Raises:
        InvalidInput: anything else.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                           parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"body is not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                           {"position": exc.pos}) from None
    except RecursionError:
        raise InvalidInput("body is nested too deeply") from None
    except ValueError:  # an integer of over 4,300 digits (CPython's conversion limit)
        raise InvalidInput("body holds a number too long to read") from None
    check_values(value)
    return value


# Line breaks ``json.dumps`` leaves raw in a string (it escapes the C0 ones): NEL, U+2028, U+2029.
_RAW_BREAKS = ("\x85", "\u2028", "\u2029")


def jsonl_line(value: Any) -> str:
    """One line of a JSONL file (``semmem export``, the admin and console exports): compact
    JSON and ``"\n"``, with every character ``str.splitlines`` breaks on escaped, so a reader
    splitting at any line break still reads one record a line."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char in _RAW_BREAKS:
        # only ever inside a string: JSON's whitespace outside strings is ASCII
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text + "\n"


async def jsonl_chunks(records: Sequence[T], public: Callable[[T], Any], *,
                       size: int = CHUNK) -> AsyncIterator[bytes]:
    """The JSONL lines of ``records`` (each as ``public`` makes it), UTF-8, ``size`` records
    a chunk, produced as they are sent, the event loop released between chunks: a stream of
    many records holds no other request for more than one chunk's work."""
    for start in range(0, len(records), size):
        yield "".join(jsonl_line(public(r)) for r in records[start:start + size]).encode()
        await asyncio.sleep(0)


def jsonl_lines(text: str) -> Iterator[tuple[int, str]]:
    """The records' lines of a JSONL text with their numbers (from 1), blank ones left out:
    what every JSONL reader splits with (``semmem import``, ``semmem ingest``). Lines end at
    ``"\n"`` only: ``str.splitlines`` would also end one at a raw U+2028, NEL or form feed
    inside a string (valid JSON; exports escape them, a file written elsewhere may not), so a
    valid record would read as "not JSON"."""
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield lineno, line


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON; with ``sort_keys`` the bytes depend only on the value (replays)."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, sort_keys=sort_keys
    ).encode("utf-8")
