"""The HTTP memory provider contract's limits and the small pure helpers every surface shares.

No engine is imported here (nor anything that imports one): the declaration, the web layer, the
core and the store read their limits from this one place.
"""

from __future__ import annotations

import hashlib

from semmem.errors import InvalidInput

MAX_RECALL_BYTES = 16_384  # maxBytes of a recall: 1 to this
MAX_SOURCES = 100  # sources of one recall
MAX_ID_BYTES = 1024  # a source id or a cursor, in UTF-8 bytes
MAX_BODY = 64 * 1024  # a request body
MAX_RESPONSE = 64 * 1024  # a response body
MAX_TEXT_CHARS = 2000  # an item text, after trimming
MAX_QUERY_CHARS = 2000  # a search query
MAX_SEARCH_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 10
TITLE_CHARS = 80  # a source's title: the first characters of its item


def sha256_hex(text: str) -> str:
    """SHA-256 of a string in hex; lone surrogates (valid in JSON, not in UTF-8) hash too."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_cursor(partition: str, seq: int) -> str:
    """Opaque read state: the partition's write sequence, tagged with the partition."""
    return f"c1.{seq}.{sha256_hex(partition)[:10]}"


def parse_cursor(partition: str, cursor: str) -> int:
    """The write sequence a cursor names.

    Raises:
        InvalidInput: not a cursor of this partition.
    """
    parts = cursor.split(".") if isinstance(cursor, str) else []
    if len(parts) != 3 or parts[0] != "c1" or not parts[1].isdigit():
        raise InvalidInput("cursor is not one semmem issued")
    if make_cursor(partition, int(parts[1])) != cursor:
        raise InvalidInput("cursor belongs to another partition")
    return int(parts[1])
