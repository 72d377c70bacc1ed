"""What the store hands out: frozen views of one partition, each type with one meaning.

- ``PartitionSnapshot``: every live item of a partition at one table version (recall, search,
  listing); cached by the store per version.
- ``WriteView``: the rows one write decides on at one version (head, its records, the numbers it
  targets, the texts it may duplicate) and the partition's live count (and how many of its
  live items carry their own expiry), which the commit's head row carries on.
- ``IndexedView``: the head and live count of a partition read through its vector index.
- ``Candidates``: the items an index search (or a recency scan) returned for one query.

``PartitionSnapshot`` and ``Candidates`` are both an ``ItemSet``, what ranking scores. Only
numpy here: ranking imports this module without loading the storage engine.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from semmem.items import EXPIRES, Item, Vectors, dedupe_key
from semmem.store.reads.persistent import ItemRows, key_rank

T = TypeVar("T")
# A set's items in row order: a list, or chunks shared between snapshots (``evolve``).
Items = list[Item] | ItemRows


@dataclass(frozen=True)
class OpRecord:
    """A committed write's idempotency record: what was asked and what was answered."""

    key: str
    fingerprint: str
    result: str
    expires: int | None  # ``None``: kept while its partition lives (a session's ledger)

    def result_json(self) -> dict[str, Any]:
        """The original result, decoded."""
        value = json.loads(self.result)
        assert isinstance(value, dict)
        return value


@dataclass(frozen=True)
class Tombstone:
    """What remains of a forgotten item: its number and when it went."""

    n: int
    seq: int
    updated: int
    created: int | None = None  # the write sequence that created the item, if known


@dataclass(frozen=True)
class Head:
    """A partition's counters at one table version."""

    partition: str
    version: int
    hwm: int  # the highest number ever assigned
    seq: int  # the partition's write sequence (what a cursor names)
    model: str | None
    # Carried in the head row (``store/schema.py``), ``None`` where a table of older layout
    # lacks them: the live items, how many of them carry their own expiry (``expiresAt``),
    # and how many are not the model's (``semmem.audience``: counted apart for the model).
    live: int | None = None
    expiring: int | None = None
    application: int | None = None
    # A deleted partition's tombstone (``store/commit/tombstone.py``): an empty partition
    # whose name a write records again in the registry before committing on it.
    gone: bool = False

    @classmethod
    def empty(cls, partition: str) -> Head:
        """The head of a partition that has never been written."""
        return cls(partition, 0, 0, 0, None, 0, 0, 0)


class _HeadFields:
    """The head's counters read off a view directly (``view.seq`` for ``view.head.seq``)."""

    head: Head

    @property
    def partition(self) -> str:
        """The partition the view is of."""
        return self.head.partition

    @property
    def version(self) -> int:
        """The table version the view was read at."""
        return self.head.version

    @property
    def hwm(self) -> int:
        """The highest number ever assigned in the partition."""
        return self.head.hwm

    @property
    def seq(self) -> int:
        """The partition's write sequence (what a cursor names)."""
        return self.head.seq

    @property
    def model(self) -> str | None:
        """The model the partition's vectors are from."""
        return self.head.model


@dataclass(frozen=True, eq=False)
class ItemSet:
    """Items in number order with their vectors (row ``i`` of ``vectors`` is ``items[i]``).

    Ranking hangs its own per-set precomputations on it (``cached``): built once, shared by
    every recall of the same set.
    """

    items: Items
    vectors: Vectors
    # Built from ``items`` unless given (a snapshot evolved from another one carries them).
    by_n: Mapping[int, int] = field(default_factory=dict, kw_only=True, repr=False)
    # Derived structures to start from (ones evolved from the previous snapshot's).
    derived: dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.by_n, dict) and not self.by_n and self.items:
            self.by_n.update((item.n, i) for i, item in enumerate(self.items))

    @property
    def size(self) -> int:
        """How many items the set holds (rows of ``vectors``)."""
        return len(self.items)

    @property
    def count(self) -> int:
        """Live items this set stands for (its size, unless a subclass knows more)."""
        return len(self.items)

    def get(self, n: int) -> Item | None:
        """Item ``n`` if the set holds it."""
        i = self.by_n.get(n)
        return None if i is None else self.items[i]

    def index_of(self, n: int) -> int | None:
        """Row of item ``n`` in ``items`` and ``vectors``."""
        return self.by_n.get(n)

    def cached(self, name: str, build: Callable[[ItemSet], T]) -> T:
        """A derived structure (e.g. a lexical index), built once per set."""
        with self._lock:
            if name not in self.derived:
                self.derived[name] = build(self)
            value: T = self.derived[name]
            return value


@dataclass(frozen=True, eq=False)
class PartitionSnapshot(ItemSet, _HeadFields):
    """Every live item, tombstone and idempotency record of a partition at one version."""

    head: Head
    tombstones: Mapping[int, Tombstone] = field(default_factory=dict)
    ops: Mapping[str, OpRecord] = field(default_factory=dict)
    # dedupe key → number (see ``key_map``), built unless given.
    by_key: Mapping[str, int] = field(default_factory=dict, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.by_key, dict) and not self.by_key and self.items:
            self.by_key.update(key_map(self.items))

    @property
    def last_update(self) -> int | None:
        """When anything in the partition last changed (an edit, an addition or a forget)."""
        times = [it.updated for it in self.items] + [t.updated for t in self.tombstones.values()]
        return max(times, default=None)

    @property
    def indexed(self) -> bool:
        """Whether the view stands for a partition read through its index (never: all items)."""
        return False

    @classmethod
    def empty(cls, partition: str, dim: int) -> PartitionSnapshot:
        """The state of a partition that has never been written."""
        return cls([], np.zeros((0, dim), np.float32), Head.empty(partition))

    def find_text(self, text: str) -> Item | None:
        """The live item whose text equals ``text`` up to case and whitespace (one recall can
        show, if there is one)."""
        n = self.by_key.get(dedupe_key(text))
        return None if n is None else self.get(n)

    @property
    def text_bytes(self) -> int:
        """UTF-8 bytes of every live item's text (what a byte quota counts), once per set."""
        return self.cached("text_bytes", lambda s: text_bytes(s.items))

    @property
    def not_models_bytes(self) -> int:
        """UTF-8 bytes of the live texts not the model's (``semmem.audience``: what the byte
        quota counts apart), once per set."""
        return self.cached("not_models_bytes", lambda s: not_models_bytes(s.items))


def expiring(items: Iterable[Item]) -> int:
    """How many of ``items`` carry their own expiry (an ``expiresAt`` record field)."""
    return sum(1 for it in items if EXPIRES in it.attrs)


def text_bytes(items: Sequence[Item]) -> int:
    """UTF-8 bytes of the items' texts."""
    return sum(len(it.text.encode("utf-8")) for it in items)


def not_models_bytes(items: Sequence[Item]) -> int:
    """UTF-8 bytes of the texts of those of ``items`` that are not the model's."""
    return text_bytes([it for it in items if it.application])


def key_map(items: Sequence[Item]) -> dict[str, int]:
    """Dedupe key → the number of the item ``key_rank`` prefers among those with that key."""
    best: dict[str, Item] = {}
    for item in items:
        key = dedupe_key(item.text)
        held = best.get(key)
        if held is None or key_rank(item) > key_rank(held):
            best[key] = item
    return {key: item.n for key, item in best.items()}


@dataclass(frozen=True, eq=False)
class WriteView(ItemSet, _HeadFields):
    """The rows one write looked up at one version; ``live`` is the partition's live count,
    ``expiring`` how many live items carry their own expiry, ``application`` how many are not
    the model's (``semmem.audience``), ``text_bytes`` the UTF-8 bytes of its live texts and
    ``application_bytes`` those of the ones not the model's (read only when a byte quota needs
    them)."""

    head: Head
    live: int
    tombstones: dict[int, Tombstone] = field(default_factory=dict)
    ops: dict[str, OpRecord] = field(default_factory=dict)
    text_bytes: int | None = None
    expiring: int = 0
    application: int = 0
    application_bytes: int | None = None
    _by_key: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._by_key.update(key_map(self.items))

    @property
    def count(self) -> int:
        """Live items in the partition (not only the looked-up ones)."""
        return self.live

    def find_text(self, text: str) -> Item | None:
        """The looked-up live item whose text equals ``text`` up to case and whitespace (one
        recall can show, if there is one)."""
        n = self._by_key.get(dedupe_key(text))
        return None if n is None else self.get(n)


@dataclass(frozen=True)
class IndexedView(_HeadFields):
    """A partition past the index threshold: its head and live count, no items (the count is
    the head row's, where it carries one)."""

    head: Head
    count: int
    # Which table the version is of (``files.incarnation``; ``""``: not known): a partition
    # deleted and made again numbers its versions from 1 again, never with the same files.
    incarnation: str = field(default="", compare=False)
    # What reads keep per view (a filter's counts), carried to the view of this process's
    # next commit by its ``evolve`` (``store/reads/snapshots.py``).
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def indexed(self) -> bool:
        """Whether the view stands for a partition read through its index (always)."""
        return True

    @property
    def items(self) -> list[Item]:
        """None: an indexed partition's items come from ``Store.nearest`` or ``recent``."""
        return []


@dataclass(frozen=True, eq=False)
class Candidates(ItemSet, _HeadFields):
    """The live items one index search or recency scan returned (in number order)."""

    head: Head


ReadView = PartitionSnapshot | IndexedView
