"""An immutable, in-memory view of one partition at one table version.

Built once per table version and cached by the store; recall, search and the write checks all
read from it. Ranking components hang their own precomputations on it (``derived``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from semmem.embedder import Vectors
from semmem.items import Item, dedupe_key

T = TypeVar("T")


@dataclass(frozen=True)
class OpRecord:
    """A committed write's idempotency record: what was asked and what was answered."""

    key: str
    fingerprint: str
    result: str
    expires: int

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


@dataclass
class Snapshot:
    """Live items (number order), tombstones, idempotency records and counters of a partition.

    A *write view* (``live`` set) is the same at one table version, limited to the rows a write
    looked up (its operation record, the numbers it targets, the texts it may duplicate).
    """

    partition: str
    version: int
    hwm: int
    seq: int
    model: str | None
    items: list[Item]
    vectors: Vectors
    tombstones: dict[int, Tombstone]
    ops: dict[str, OpRecord]
    # A write view holds only the rows its write looked up; ``live`` is then the partition's
    # live item count, which ``items`` alone would not give.
    live: int | None = None
    # Past the store's index threshold a read view holds no items: recall and search ask the
    # vector index for candidates instead (``Store.nearest``).
    indexed: bool = False
    derived: dict[str, Any] = field(default_factory=dict)
    _by_n: dict[int, int] = field(default_factory=dict)
    _by_key: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._by_n = {item.n: i for i, item in enumerate(self.items)}
        self._by_key = {dedupe_key(item.text): item.n for item in self.items}

    @classmethod
    def empty(cls, partition: str, dim: int) -> Snapshot:
        """The state of a partition that has never been written."""
        return cls(partition, 0, 0, 0, None, [], np.zeros((0, dim), np.float32), {}, {})

    @property
    def count(self) -> int:
        """Number of live items."""
        return len(self.items) if self.live is None else self.live

    def get(self, n: int) -> Item | None:
        """The live item numbered ``n``, if any."""
        i = self._by_n.get(n)
        return None if i is None else self.items[i]

    def index_of(self, n: int) -> int | None:
        """Row of item ``n`` in ``items`` and ``vectors``."""
        return self._by_n.get(n)

    def find_text(self, text: str) -> Item | None:
        """The live item whose text equals ``text`` up to case and whitespace."""
        n = self._by_key.get(dedupe_key(text))
        return None if n is None else self.get(n)

    def cached(self, name: str, build: Callable[[Snapshot], T]) -> T:
        """A derived structure (e.g. a lexical index), built once per snapshot."""
        with self._lock:
            if name not in self.derived:
                self.derived[name] = build(self)
            value: T = self.derived[name]
            return value
