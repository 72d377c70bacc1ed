"""The HTTP memory provider contract's limits and the small pure helpers every surface shares.

No engine is imported here (nor anything that imports one): the declaration, the web layer, the
core and the store read their limits from this one place.
"""

from __future__ import annotations

import hashlib
import re

from semmem.errors import InvalidInput

MAX_RECALL_BYTES = 16_384  # maxBytes of a recall: 1 to this
MAX_SOURCES = 100  # sources of one recall
MAX_ID_BYTES = 1024  # a source id or a cursor, in UTF-8 bytes
# A partition key: the host derives it from project, environment, resource and namespace ids
# (a namespace is at most 128 characters), so a kilobyte leaves room; longer keys are refused.
MAX_PARTITION_BYTES = 1024
MAX_BODY = 64 * 1024  # a request body
MAX_RESPONSE = 64 * 1024  # a response body
MAX_TEXT_CHARS = 2000  # an item text, after trimming
MAX_QUERY_CHARS = 2000  # a search query
MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 10
TITLE_CHARS = 80  # a source's title: the first characters of its item
# A request's deadlineAt may be at most this far ahead: idempotency records are kept until the
# deadline, so an unbounded one would keep a record (and a forgotten text's fingerprint) forever.
DEADLINE_HORIZON_MS = 24 * 3600 * 1000
_ASCII_DIGITS = re.compile(r"[0-9]+")


def ascii_int(text: str | None, *, max_digits: int = 18) -> int | None:
    """The non-negative integer ``text`` spells in ASCII digits (surrounding blanks allowed),
    else ``None``; at most ``max_digits`` digits, so a huge number costs nothing."""
    if text is None:
        return None
    text = text.strip(" \t")
    if not 0 < len(text) <= max_digits or not _ASCII_DIGITS.fullmatch(text):
        return None
    return int(text)


def sha256_hex(text: str) -> str:
    """SHA-256 of a string in hex; lone surrogates (valid in JSON, not in UTF-8) hash too."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_partition(partition: str) -> str:
    """A partition key within ``MAX_PARTITION_BYTES``.

    Raises:
        InvalidInput: longer (the key itself is not echoed).
    """
    if len(partition.encode("utf-8", "surrogatepass")) > MAX_PARTITION_BYTES:
        raise InvalidInput(f"partition must be at most {MAX_PARTITION_BYTES} UTF-8 bytes",
                           {"limit": MAX_PARTITION_BYTES})
    return partition


def make_cursor(partition: str, seq: int) -> str:
    """Opaque read state: the partition's write sequence, tagged with the partition."""
    return f"c1.{seq}.{sha256_hex(partition)[:10]}"


def parse_cursor(partition: str, cursor: str) -> int:
    """The write sequence a cursor names.

    Raises:
        InvalidInput: not a cursor of this partition.
    """
    parts = cursor.split(".") if isinstance(cursor, str) else []
    seq = ascii_int(parts[1]) if len(parts) == 3 and parts[0] == "c1" else None
    if seq is None or parts[1] != str(seq):
        raise InvalidInput("cursor is not one semmem issued")
    if make_cursor(partition, seq) != cursor:
        raise InvalidInput("cursor belongs to another partition")
    return seq
