"""A store piece's ``store`` record field as export writes it and import takes it back
(engine-free: ``semmem.importing`` reads it).

The first piece of an item holds ``{"value", "created", "updated", "ttl", "indexed"}``, each
other piece ``{"part": i}``; a piece's position (its address and part) is what tells two
imported records apart, not its text (an index text may equal a fact's).
"""

from __future__ import annotations

import math
from typing import Any

from semmem.errors import InvalidArguments

STORE = "store"  # the record field


def of_store(record: dict[str, Any]) -> bool:
    """Whether an export's record is a store item's piece (the application's store takes it
    back: ``lifecycle/owners.py``)."""
    keyed = record.get("keyed")
    return record.get(STORE) is not None \
        or (isinstance(keyed, dict) and keyed.get("space") == STORE)


def clean_store(value: object) -> dict[str, Any]:
    """A ``store`` record field as stored (an import's).

    Raises:
        InvalidArguments: neither a value's head nor ``{"part": n}`` with valid members.
    """
    if not isinstance(value, dict):
        raise InvalidArguments(f"{STORE} must be an object")
    if "value" not in value:
        part = value.get("part")
        if set(value) != {"part"} or isinstance(part, bool) or not isinstance(part, int) \
                or part < 1:
            raise InvalidArguments(f"{STORE} must hold a value, or a part number ≥ 1")
        return {"part": part}
    if not set(value) <= {"value", "created", "updated", "ttl", "indexed"} \
            or not isinstance(value["value"], dict):
        raise InvalidArguments(f"{STORE}.value must be an object")
    out: dict[str, Any] = {"value": value["value"]}
    for name in ("created", "updated"):
        when = value.get(name)
        if when is not None:
            if isinstance(when, bool) or not isinstance(when, int) or when < 0:
                raise InvalidArguments(f"{STORE}.{name} must be epoch milliseconds")
            out[name] = when
    ttl = value.get("ttl")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)
                            or not math.isfinite(ttl) or ttl <= 0):
        raise InvalidArguments(f"{STORE}.ttl must be a positive number of minutes")
    out["ttl"] = ttl
    out["indexed"] = value.get("indexed") is not False
    return out


def store_position(attrs: dict[str, Any]) -> tuple[object, ...] | None:
    """Where a store piece sits (its address and part), or ``None`` for any other item."""
    keyed, body = attrs.get("keyed"), attrs.get(STORE)
    if not isinstance(keyed, dict) or keyed.get("space") != "store" \
            or not isinstance(body, dict):
        return None
    return (keyed.get("space"), keyed.get("key"), 0 if "value" in body else body.get("part"))
