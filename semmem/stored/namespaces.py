"""Store namespaces: which partition holds a namespace's items, and the registry that lists
the namespaces holding store items without listing every partition.

A namespace is its labels, each with ``%`` written ``%25`` and ``/`` written ``%2F``, joined by
``/`` (the clients' mapping: ``("users", "alice")`` is partition ``users/alice``, ``("alice",)``
is ``alice``, the partition the other adapters use for that user). The registry is the
partition ``REGISTRY`` (no namespace maps to it: a label's ``%`` is always written ``%25``),
holding one keyed item per namespace that ever held a store item (space ``store-ns``, key: the
namespace, each label with ``%``, ``/`` and control characters percent-encoded as UTF-8:
``registry_key``). A put records its namespace there first (once: a lookup by address finds it), so
a crash between the two leaves at most a listed namespace without items, which ``listing``
leaves out: it checks each namespace it would answer for a live item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

import numpy as np

from semmem.contract import MAX_PARTITION_BYTES, check_label
from semmem.errors import InvalidArguments
from semmem.keyed.address import Address
from semmem.keyed.index import addresses
from semmem.store.views import IndexedView

if TYPE_CHECKING:
    from semmem.keyed.items import Keyed

REGISTRY = "%store-namespaces"
NAMESPACE_SPACE = "store-ns"
MAX_LABELS = 32


def check_namespace(value: object, what: str = "namespace", *, empty: bool = False
                    ) -> tuple[str, ...]:
    """A namespace as given: a list of labels by the rule of caller-chosen labels
    (``contract.check_label``: no control, line-separator or bidirectional formatting
    character; LangGraph itself refuses only an empty label, NUL and ``.``).

    Raises:
        InvalidArguments: not a list of labels, a label that breaks the rule, or a namespace
            that maps to no partition.
    """
    if not isinstance(value, list) or (not value and not empty) or len(value) > MAX_LABELS:
        raise InvalidArguments(f"{what} must be a list of 1-{MAX_LABELS} labels")
    for label in value:  # the rule of caller-chosen labels, as a session id's
        check_label(label, f"a {what} label", MAX_PARTITION_BYTES)
    namespace = tuple(value)
    if namespace:
        partition_of(namespace)
    return namespace


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


def _escape(label: str) -> str:
    return "".join("".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                   if c in "%/" or ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c
                   for c in label)


def registry_key(namespace: Sequence[str]) -> str:
    """The key a namespace is listed under (printable: an address key holds no control
    characters); ``namespace_of_key`` reads it back."""
    return "/".join(_escape(label) for label in namespace)


def namespace_of_key(key: str) -> tuple[str, ...]:
    """The namespace a registry key lists."""
    return tuple(unquote(label, errors="surrogatepass") for label in key.split("/"))


class Registry:
    """The namespaces that hold (or held) store items."""

    def __init__(self, keyed: Keyed) -> None:
        self.keyed = keyed

    async def record(self, namespace: Sequence[str]) -> None:
        """List ``namespace`` (a lookup when it already is; a write once)."""
        address = Address.of(NAMESPACE_SPACE, registry_key(namespace))
        held = await self.keyed.held(REGISTRY, address)
        if held.numbers:
            return
        dim = self.keyed.memory.embedder.dim
        marker = np.zeros(dim, dtype=np.float32)
        marker[0] = 1.0  # never searched: a unit vector, not a model call
        await self.keyed.put(REGISTRY, address, [(address.key, marker, {})])

    async def partitions(self, prefix: Sequence[str] = ()) -> list[str]:
        """The partitions of the listed namespaces that start with ``prefix``, sorted (the
        registry's address index: one dictionary walk, no partition read)."""
        memory = self.keyed.memory
        await memory.retention.refresh()
        view = await memory.store.read_view(REGISTRY)
        if isinstance(view, IndexedView):
            names = [a.key for a in await self.keyed.keys(REGISTRY, NAMESPACE_SPACE)]
        else:
            names = [a.key for a, ns in addresses(view).numbers.items()
                     if ns and a.space == NAMESPACE_SPACE]
        wanted = tuple(prefix)
        namespaces = [namespace_of_key(key) for key in names]
        return sorted(partition_of(ns) for ns in namespaces if ns[:len(wanted)] == wanted)
