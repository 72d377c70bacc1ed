"""A keyed item's address: ``(space, key)`` within a partition, kept in each of its pieces'
record fields and, hashed, in their rows' ``tags`` (what the ``LABEL_LIST`` index answers).

Engine-free: the store derives a row's tags from its ``attrs`` here (``row_tags``), the core
reads an item's address back (``address_of``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from semmem.contract import check_label, sha256_hex
from semmem.errors import InvalidArguments
from semmem.items import Item
from semmem.items.metadata import METADATA, tags

KEYED = "keyed"  # the record field: ``{"space": str, "key": str}``
MAX_KEY_CHARS = 1024
MAX_SPACE_CHARS = 32
_SPACE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True, order=True)
class Address:
    """Where a keyed item lives in its partition: a space (what kind of item: ``session``,
    ``store``…) and the caller's key in it (any string, compared exactly: case matters)."""

    space: str
    key: str

    @classmethod
    def of(cls, space: object, key: object) -> Address:
        """A checked address.

        Raises:
            InvalidArguments: a space that is not 1–32 of ``a-z0-9_-``, a key that breaks
                the rule of caller-chosen labels (``contract.check_label``, at most 1,024
                characters).
        """
        check_label(space, "a keyed item's space", MAX_SPACE_CHARS)
        assert isinstance(space, str)
        if not set(space) <= _SPACE_CHARS:
            raise InvalidArguments("a keyed item's space is lower-case letters, digits, '_' "
                                   "and '-'")
        return cls(space, check_label(key, "key", MAX_KEY_CHARS))

    @classmethod
    def parse(cls, value: object) -> Address:
        """The address a ``keyed`` record field holds (an import's, checked like any).

        Raises:
            InvalidArguments: not ``{"space": str, "key": str}`` with valid values.
        """
        if not isinstance(value, dict) or set(value) != {"space", "key"}:
            raise InvalidArguments(f"{KEYED} must be an object with 'space' and 'key'")
        return cls.of(value["space"], value["key"])

    @property
    def space_tag(self) -> str:
        """The row tag every piece of the space carries (listing a space's keys)."""
        return space_tag(self.space)

    @property
    def tag(self) -> str:
        """The row tag of the address: a hash (no caller's string reaches a filter
        expression); the leading byte keeps it apart from every metadata pair's tag."""
        return sha256_hex("\x01keyed\x00" + self.space + "\x00" + self.key)[:32]

    def where(self) -> str:
        """The filter expression selecting the address's rows (through the tags index)."""
        return f"array_has_all(tags, ['{self.tag}'])"

    def public(self) -> dict[str, str]:
        """The record field's value."""
        return {"space": self.space, "key": self.key}


def space_tag(space: str) -> str:
    """The row tag of every piece in ``space``."""
    return sha256_hex("\x01space\x00" + space)[:32]


def address_of(item: Item) -> Address | None:
    """The address of a keyed item's piece (``None``: an ordinary fact)."""
    found = item.attrs.get(KEYED)
    if not isinstance(found, dict):
        return None
    space, key = found.get("space"), found.get("key")
    if not isinstance(space, str) or not isinstance(key, str):
        return None
    return Address(space, key)


def row_tags(raw: str | None) -> list[str] | None:
    """An item row's tags from its ``attrs`` JSON: each metadata pair's and its address's
    (``None`` when it has neither): what ``store/schema.py`` writes to ``tags``."""
    if not raw or (METADATA not in raw and KEYED not in raw):
        return None
    attrs = json.loads(raw)
    found = attrs.get(METADATA)
    out = tags(found) if isinstance(found, dict) and found else []
    keyed = attrs.get(KEYED)
    if isinstance(keyed, dict) and isinstance(keyed.get("space"), str) \
            and isinstance(keyed.get("key"), str):
        address = Address(keyed["space"], keyed["key"])
        out += [address.tag, address.space_tag]
    return sorted(out) or None


def keyed_fields(value: Any) -> dict[str, str]:
    """A ``keyed`` record field as stored (an import's).

    Raises:
        InvalidArguments: see ``Address.parse``.
    """
    return Address.parse(value).public()
