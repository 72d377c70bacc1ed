"""A fact's metadata: a small flat JSON object of scalars, its rules and its index tags.

Metadata lives in the item's record fields (``attrs["metadata"]``), so every path that carries
an item's attrs (snapshots, exports, backups, repairs) carries it unchanged; each pair is also
written, hashed, to the row's ``tags`` column (``store/schema.py``) so that a filter on it is a
list of hex strings in a filter expression and a ``LABEL_LIST`` index can answer it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from semmem.contract import sha256_hex
from semmem.errors import InvalidArguments

METADATA = "metadata"  # the record field that holds it
MAX_KEYS = 16
MAX_VALUE_CHARS = 256
MAX_BYTES = 2048  # the canonical JSON of the whole object
KEY_PATTERN = "^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$"
_KEY = re.compile(KEY_PATTERN)
_SAFE_INT = 2**53  # integers JSON numbers hold exactly on every host

Scalar = str | int | float | bool


def scalar(value: Any, where: str) -> Scalar:
    """One metadata value as stored: a string, a finite number (integral floats as ints) or a
    boolean.

    Raises:
        InvalidArguments: any other value (objects and arrays included: metadata is flat).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidArguments(f"{where} must be a finite number")
        if abs(value) > _SAFE_INT:
            raise InvalidArguments(f"{where} must be within ±2^53")
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidArguments(f"{where} is over {MAX_VALUE_CHARS} characters")
        if "\x00" in value:
            raise InvalidArguments(f"{where} must not contain NUL characters")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArguments(f"{where} is not valid Unicode (lone surrogate)") from exc
        return value
    if isinstance(value, dict | list | tuple):
        raise InvalidArguments(f"{where} must be a string, number or boolean (metadata is "
                               "flat: one level of keys)")
    raise InvalidArguments(f"{where} must be a string, number or boolean")


def typed_value(raw: str) -> Scalar:
    """A value as a person types it (``--meta k=v``, the console's boxes): one that reads as
    a JSON number, boolean or string is that, anything else the text as typed. Only scalars
    are parsed: ``[[[…`` is text (refused by its length, if long), never a nesting the parser
    descends into until the stack runs out."""
    if raw.lstrip().startswith(("[", "{")):
        return raw
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, bool | int | float | str) else raw


def clean_metadata(value: Any) -> dict[str, Scalar] | None:
    """A metadata object as stored, or ``None`` (``None`` or ``{}``: none, clearing it).

    Raises:
        InvalidArguments: not an object, over 16 keys or 2,048 bytes, a key not matching
            ``KEY_PATTERN``, or a value that is not a string, number or boolean.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidArguments("metadata must be an object of keys to strings, numbers or "
                               "booleans")
    if len(value) > MAX_KEYS:
        raise InvalidArguments(f"metadata has {len(value)} keys; at most {MAX_KEYS} are allowed",
                               {"maxProperties": MAX_KEYS})
    out: dict[str, Scalar] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise InvalidArguments("metadata keys are 1–64 characters: a letter or '_', then "
                                   "letters, digits, '_', '.', ':' or '-'",
                                   {"pattern": KEY_PATTERN})
        out[key] = scalar(item, f"metadata.{key}")
    if len(canonical(out).encode("utf-8")) > MAX_BYTES:
        raise InvalidArguments(f"metadata is over {MAX_BYTES} bytes as JSON",
                               {"maxBytes": MAX_BYTES})
    return out or None


def canonical(value: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces): what a tag hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def value_key(value: Any) -> str:
    """A value as filters compare it: equal exactly when their ``canonical`` JSON is, without
    JSON for strings and integers (a string's key starts with ``s``, which no other value's
    JSON does): a filter checks every candidate's metadata with it."""
    if type(value) is str:
        return "s" + value
    return repr(value) if type(value) is int else canonical(value)


def tag(key: str, value: Scalar) -> str:
    """The index tag of one pair: a hash, so no caller's string reaches a filter expression.
    ``1`` and ``1.0`` are one value; ``true`` and ``1`` are not."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return sha256_hex(key + "\x00" + canonical(value))[:32]


def tags(metadata: dict[str, Any] | None) -> list[str]:
    """The tags of every pair of ``metadata`` (stored values), sorted."""
    return sorted(tag(k, v) for k, v in (metadata or {}).items())


def tags_of_attrs(raw: str | None) -> list[str] | None:
    """The tags of an item row's ``attrs`` JSON (``None`` when it carries no metadata)."""
    if not raw or METADATA not in raw:
        return None
    found = json.loads(raw).get(METADATA)
    return tags(found) if isinstance(found, dict) and found else None
