"""Store namespaces: which partition holds a namespace's items, and the listing of the
namespaces that hold store items without opening every partition.

A namespace is its labels, each with ``%`` written ``%25`` and ``/`` written ``%2F``, joined by
``/`` (the clients' mapping: ``("users", "alice")`` is partition ``users/alice``, ``("alice",)``
is ``alice``, the partition the other adapters use for that user). The listing is the store's
listing records (``semmem.store.system``), system records kept by the write path itself: a
partition is listed once a write adds a store item to it and until its last one goes or the
partition does, with when its items may have all expired (``until``). ``Registry.partitions``
reads only those records; a reader checks what it answers for a live item (``until`` is an
upper bound, and an expired item stays until swept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from semmem.contract import MAX_PARTITION_BYTES
from semmem.errors import InvalidArguments
from semmem.items import now_ms

if TYPE_CHECKING:
    from semmem.stored.ports import Core

MAX_LABELS = 32


def check_namespace(value: object, what: str = "namespace", *, empty: bool = False
                    ) -> tuple[str, ...]:
    """A namespace as given: a list of labels (``check_namespace_label``).

    Raises:
        InvalidArguments: not a list of labels, a label that breaks the rule, or a namespace
            that maps to no partition.
    """
    if not isinstance(value, list) or (not value and not empty) or len(value) > MAX_LABELS:
        raise InvalidArguments(f"{what} must be a list of 1-{MAX_LABELS} labels")
    for label in value:
        check_namespace_label(label, f"a {what} label")
    namespace = tuple(value)
    if namespace:
        partition_of(namespace)
    return namespace


def check_namespace_label(label: object, what: str) -> str:
    """A namespace label: the application's key, never a line a model reads (store items are
    not the model's: ``semmem.audience``), so it takes what LangGraph's own stores take —
    newlines and other control characters included — and refuses what LangGraph's
    ``BaseStore`` refuses that would break the mapping or the storage: an empty label (``a//b``
    would read back as another namespace), NUL, a lone surrogate (not Unicode). ``%`` and
    ``/`` are escaped by the mapping (``partition_of``). A session id or a role, rendered in
    the model's recall lines, keeps the rule of caller-chosen labels (``contract.check_label``).

    Raises:
        InvalidArguments: not a non-empty string of at most ``MAX_PARTITION_BYTES``
            characters, NUL, or not valid Unicode (the label is never echoed).
    """
    if not isinstance(label, str) or not label:
        raise InvalidArguments(f"{what} must be a non-empty string")
    if len(label) > MAX_PARTITION_BYTES:
        raise InvalidArguments(f"{what} is {len(label)} characters; at most "
                               f"{MAX_PARTITION_BYTES} are allowed",
                               {"maxLength": MAX_PARTITION_BYTES})
    if "\x00" in label:
        raise InvalidArguments(f"{what} must not contain NUL (U+0000)")
    try:
        label.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArguments(f"{what} is not valid Unicode (lone surrogate)") from exc
    return label


def partition_of(namespace: Sequence[str]) -> str:
    """The partition a namespace's items live in.

    Raises:
        InvalidArguments: past ``MAX_PARTITION_BYTES`` UTF-8 bytes.
    """
    partition = "/".join(label.replace("%", "%25").replace("/", "%2F") for label in namespace)
    try:
        size = len(partition.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidArguments("a namespace label is not valid Unicode") from exc
    if size > MAX_PARTITION_BYTES:
        raise InvalidArguments(f"the namespace maps to a partition of more than "
                               f"{MAX_PARTITION_BYTES} UTF-8 bytes",
                               {"limit": MAX_PARTITION_BYTES})
    return partition


def namespace_of(partition: str) -> tuple[str, ...]:
    """The namespace of a partition (``partition_of``'s inverse)."""
    return tuple(label.replace("%2F", "/").replace("%25", "%")
                 for label in partition.split("/"))


@dataclass(frozen=True)
class Condition:
    """A ``list_namespaces`` condition: a namespace's first (``prefix``) or last (``suffix``)
    labels match ``path``, where ``*`` matches any one label."""

    kind: str
    path: tuple[str, ...]

    def fits(self, namespace: tuple[str, ...]) -> bool:
        """Whether ``namespace`` matches."""
        if len(self.path) > len(namespace):
            return False
        part = namespace[:len(self.path)] if self.kind == "prefix" \
            else namespace[len(namespace) - len(self.path):]
        return all(p in ("*", label) for p, label in zip(self.path, part, strict=True))


class Registry:
    """The namespaces that hold store items, from the store's listing records."""

    def __init__(self, core: Core) -> None:
        self.core = core

    async def partitions(self, prefix: Sequence[str] = ()) -> list[str]:
        """The partitions of the listed namespaces that start with ``prefix`` and may still
        hold a live item, in their namespaces' order (the listing records alone: no partition
        read)."""
        wanted, now = tuple(prefix), now_ms()
        found = []
        for record in (await self.core.listings()).values():
            partition = str(record["partition"])
            until = record.get("until")
            if until is not None and until <= now:
                continue
            if namespace_of(partition)[:len(wanted)] == wanted:
                found.append(partition)
        return sorted(found, key=namespace_of)
