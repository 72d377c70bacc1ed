"""The HTTP memory provider contract's limits and the small pure helpers every surface shares.

No engine is imported here (nor anything that imports one): the declaration, the web layer, the
core and the store read their limits from this one place.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from semmem.errors import InvalidArguments, InvalidInput

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
# What a caller-chosen label may not hold: control characters (C0, DEL, C1), the line and
# paragraph separators, and the bidirectional formatting characters (which reorder how the
# text around them reads).
_LABEL_REFUSES = r"\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_NOT_IN_LABELS = re.compile(f"[{_LABEL_REFUSES}]")
MAX_ROLE_CHARS = 64  # a message's role
_NOT_IN_ROLES = re.compile(f"[{_LABEL_REFUSES}\\[\\]]")  # and its line head's brackets


def check_label(value: object, what: str, limit: int) -> str:
    """A caller-chosen label, by the one rule they all follow: a session id (a keyed item's
    key), a message's role — what a recall line may render to a model. Compared exactly;
    never trimmed here. (A store namespace's label is the application's key, never a model's
    line: ``stored.namespaces.check_namespace_label``.)

    Raises:
        InvalidArguments: not a non-empty string of at most ``limit`` characters, not valid
            Unicode, or holding a control, line-separator or bidirectional formatting
            character (named by code point; the label is never echoed).
    """
    if not isinstance(value, str) or not value:
        raise InvalidArguments(f"{what} must be a non-empty string")
    if len(value) > limit:
        raise InvalidArguments(f"{what} is {len(value)} characters; at most {limit} are allowed",
                               {"maxLength": limit})
    found = _NOT_IN_LABELS.search(value)
    if found is not None:
        raise InvalidArguments(f"{what} must not contain control, line-separator or "
                               f"bidirectional formatting characters (it holds "
                               f"U+{ord(found.group()):04X})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArguments(f"{what} is not valid Unicode (lone surrogate)") from exc
    return value


def check_role(value: object, what: str) -> str:
    """A message's role: a label (``check_label``) of at most ``MAX_ROLE_CHARS`` characters
    without ``[`` or ``]``, so it cannot close its recall line's head (``12. [2023-05-20 user]
    …``) and forge another line's.

    Raises:
        InvalidArguments: see ``check_label``; a bracket.
    """
    role = check_label(value, what, MAX_ROLE_CHARS)
    if "[" in role or "]" in role:
        raise InvalidArguments(f"{what} must not contain '[' or ']' (a recall line shows it "
                               "as [date role])")
    return role


@lru_cache(maxsize=1024)
def shown_role(value: str) -> str:
    """A role read back from a store as a recall line shows it: one a store kept from before
    ``check_role`` (or an import's file written elsewhere) with each character that rule
    refuses replaced by U+FFFD, cut to ``MAX_ROLE_CHARS``."""
    return _NOT_IN_ROLES.sub("\ufffd", value[:MAX_ROLE_CHARS])


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
