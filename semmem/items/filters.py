"""Filters over a partition's facts: metadata equality and ``updated`` / ``ts`` ranges.

A ``Filter`` is checked two ways that must agree: ``matches`` on an item (snapshots, listings,
the post-check of index candidates) and ``where``, the same test as a filter expression over a
partition table's columns (an indexed partition's prefilter). Every value that reaches the
expression is an integer or a hex tag (``semmem.items.metadata.tag``), never a caller's string.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from semmem.errors import InvalidArguments
from semmem.items import Item, iso, parse_time
from semmem.items.metadata import (
    MAX_KEYS,
    METADATA,
    Scalar,
    canonical,
    clean_metadata,
    tag,
    typed_value,
    value_key,
)

BOUNDS = ("gte", "gt", "lte", "lt")
RANGES = ("updated", "ts")  # the item fields a range applies to (epoch ms inside)
FIELDS = (METADATA, *RANGES)


def pairs(given: Iterable[str], what: str) -> dict[str, Any] | None:
    """``key=value`` pairs as a metadata object, as a person types them (CLI ``--meta``, the
    console's filter): a value that reads as a JSON number or boolean is one, else a string
    (``'"3"'`` for the string). ``None`` when none were given; not yet checked
    (``clean_metadata`` does that).

    Raises:
        InvalidArguments: a pair without ``=`` (``what`` names where it was given).
    """
    out: dict[str, Any] = {}
    for pair in given:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise InvalidArguments(f"{what} takes key=value, not {pair[:40]!r}")
        out[key] = typed_value(raw)
    return out or None


_BREAKS = ("\u0085", "\u2028", "\u2029")  # line breaks ``json.dumps`` leaves unescaped


def typed(key: str, value: Scalar) -> str:
    """A stored metadata pair as a person types it, so that ``pairs`` (on the line, stripped,
    as the console reads it) gives ``value`` back: a number or boolean bare, a string bare
    unless it would then read as another value, lose spaces at its ends or break its line, in
    which case in JSON quotes (``run="3"``)."""
    if not isinstance(value, str):
        return f"{key}={canonical(value)}"
    bare = f"{key}={value}"
    if value == value.strip() and len(bare.splitlines()) == 1 \
            and pairs([bare], "") == {key: value}:
        return bare
    quoted = json.dumps(value, ensure_ascii=False)
    for char in _BREAKS:
        quoted = quoted.replace(char, f"\\u{ord(char):04x}")
    return f"{key}={quoted}"


@dataclass(frozen=True)
class Range:
    """Epoch milliseconds from ``lo`` to ``hi``, both inclusive (``None``: open)."""

    lo: int | None = None
    hi: int | None = None

    @classmethod
    def parse(cls, raw: Any, name: str) -> Range:
        """``{"gte"|"gt": ISO, "lte"|"lt": ISO}`` → a range (``gt``/``lt`` exclusive).

        Raises:
            InvalidArguments: not an object of those bounds with ISO 8601 values.
        """
        if not isinstance(raw, Mapping) or not raw or any(k not in BOUNDS for k in raw):
            raise InvalidArguments(f"filter.{name} must be an object with gte, gt, lte or lt")
        ms: dict[str, int] = {}
        for key, value in raw.items():
            ms[key] = parse_time(value, f"filter.{name}.{key}")
        lows = [ms["gte"]] if "gte" in ms else []
        lows += [ms["gt"] + 1] if "gt" in ms else []
        highs = [ms["lte"]] if "lte" in ms else []
        highs += [ms["lt"] - 1] if "lt" in ms else []
        return cls(max(lows) if lows else None, min(highs) if highs else None)

    def holds(self, value: int) -> bool:
        """Whether ``value`` is within the range."""
        return (self.lo is None or value >= self.lo) and (self.hi is None or value <= self.hi)

    def both(self, other: Range) -> Range:
        """The range within both."""
        los = [v for v in (self.lo, other.lo) if v is not None]
        his = [v for v in (self.hi, other.hi) if v is not None]
        return Range(max(los) if los else None, min(his) if his else None)

    def clauses(self, column: str) -> list[str]:
        """The range as filter-expression clauses over ``column``."""
        return ([f"{column} >= {int(self.lo)}"] if self.lo is not None else []) + \
            ([f"{column} <= {int(self.hi)}"] if self.hi is not None else [])

    def public(self) -> dict[str, str]:
        """The range as given on the wire (inclusive bounds)."""
        return ({"gte": iso(self.lo)} if self.lo is not None else {}) | \
            ({"lte": iso(self.hi)} if self.hi is not None else {})


@dataclass(frozen=True)
class Filter:
    """Which facts a read or a delete covers: every metadata pair equal, both ranges held."""

    metadata: dict[str, Scalar] = field(default_factory=dict)
    updated: Range = Range()
    ts: Range = Range()

    @classmethod
    def parse(cls, raw: Any) -> Filter:
        """A wire filter ``{"metadata"?: {k: v}, "updated"?: range, "ts"?: range}``.

        Raises:
            InvalidArguments: an unknown field, metadata that breaks its rules, a bad range.
        """
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise InvalidArguments("filter must be an object")
        unknown = [k for k in raw if k not in FIELDS]
        if unknown:
            raise InvalidArguments(f"unknown filter field {str(unknown[0])[:40]!r}; known: "
                                   + ", ".join(FIELDS))
        meta = clean_metadata(raw.get(METADATA)) or {}
        return cls(meta, *(Range.parse(raw[r], r) if raw.get(r) is not None else Range()
                           for r in RANGES))

    @property
    def empty(self) -> bool:
        """Whether the filter covers every fact."""
        return not self.metadata and self.updated == Range() and self.ts == Range()

    def both(self, other: Filter) -> Filter:
        """Facts both filters cover (a binding's scope and a call's own filter).

        Raises:
            InvalidArguments: the two ask different values of one metadata key (then nothing
                matches; refusing says so rather than answering empty).
        """
        clash = [k for k, v in other.metadata.items()
                 if k in self.metadata and canonical(self.metadata[k]) != canonical(v)]
        if clash:
            raise InvalidArguments(f"filter.metadata.{clash[0]} is fixed by this binding's scope")
        meta = {**self.metadata, **other.metadata}
        if len(meta) > MAX_KEYS:
            raise InvalidArguments(f"a filter has at most {MAX_KEYS} metadata keys")
        return Filter(meta, self.updated.both(other.updated), self.ts.both(other.ts))

    def stamp(self, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        """``metadata`` with this scope's pairs set: what a scoped binding writes.

        Raises:
            InvalidArguments: ``metadata`` gives a scoped key another value.
        """
        if not self.metadata:
            return metadata
        given = clean_metadata(metadata) or {}
        clash = [k for k, v in self.metadata.items()
                 if k in given and canonical(given[k]) != canonical(v)]
        if clash:
            raise InvalidArguments(f"metadata.{clash[0]} is fixed by this binding's scope")
        return clean_metadata({**given, **self.metadata})

    @cached_property
    def _keys(self) -> dict[str, str]:
        return {k: value_key(v) for k, v in self.metadata.items()}

    def matches(self, item: Item) -> bool:
        """Whether ``item`` is covered (metadata compared as stored: ``1`` = ``1.0`` ≠ ``true``)."""
        if not (self.updated.holds(item.updated) and self.ts.holds(item.ts)):
            return False
        meta = item.metadata
        return all(k in meta and value_key(meta[k]) == v for k, v in self._keys.items())

    def where(self) -> str:
        """The filter as a filter expression over a partition table's columns (``tags``,
        ``updated``, ``ts``); empty for an empty filter."""
        parts = self.updated.clauses("updated") + self.ts.clauses("ts")
        if self.metadata:
            quoted = ", ".join(f"'{t}'" for t in sorted(tag(k, v)
                                                        for k, v in self.metadata.items()))
            parts.append(f"array_has_all(tags, [{quoted}])")
        return " AND ".join(parts)

    def digest(self) -> str:
        """A digest of what the filter covers (equal filters, equal digests): a scope's name
        in the keys of its idempotency records."""
        covered = [sorted(self._keys.items()), [self.updated.lo, self.updated.hi],
                   [self.ts.lo, self.ts.hi]]
        return hashlib.sha256(json.dumps(covered, ensure_ascii=False).encode()).hexdigest()

    def public(self) -> dict[str, Any]:
        """The filter as a wire object (inclusive bounds)."""
        out: dict[str, Any] = {}
        if self.metadata:
            out[METADATA] = dict(self.metadata)
        for name in RANGES:
            bounds = getattr(self, name).public()
            if bounds:
                out[name] = bounds
        return out
