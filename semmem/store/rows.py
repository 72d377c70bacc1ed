"""What the core hands the store: the rows one write commits and the rows it decides on.

Plain Python and numpy (no engine), so the rules of each write can build them without loading
LanceDB. Row keys: the head row is ``"head"``, an item row ``"i:<n>"``, an idempotency record
``"o:<sha256(operationId)>"``; item texts are found by ``dkey``, a hash of the duplicate key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semmem.contract import sha256_hex
from semmem.items import dedupe_key
from semmem.store.views import OpRecord, WriteView

HEAD_KEY = "head"
KIND_HEAD, KIND_ITEM, KIND_OP = 0, 1, 2
# The fingerprint of a session's ledger of forgotten messages (``conversations/forgotten.py``):
# a record row kept while its partition lives, never an operation's (those are hex).
LEDGER = "forgotten"
# An item row's columns (``schema.partition_schema`` has them all); here, beside the row
# kinds, so the core can name what a search reads without loading the engine.
ITEM_COLUMNS = ["key", "kind", "n", "text", "vector", "ts", "updated", "revision", "seq",
                "model", "forgotten", "attrs"]
# What a recall or a search reads of its candidates: what ranking scores (vector, text,
# ``updated``), what tells live and surfaced ones (``attrs``) and what a source names
# (``revision``). Each column costs a read per candidate (``Store.nearest``).
RECALL_COLUMNS = ["kind", "n", "text", "vector", "updated", "revision", "forgotten", "attrs"]
# What a write-time hint search reads of its candidates: the numbers, the vectors scored, and
# what tells live and surfaced ones (``attrs``, ``updated``: expiry, status, merges).
HINT_COLUMNS = ["kind", "n", "vector", "updated", "forgotten", "attrs"]
CREATED = "_created"  # in an item row's attrs JSON: the write sequence that created it
NEW = 0  # ``ItemRow.created`` of an item this write creates (no write has sequence 0)


def table_name(partition: str) -> str:
    """The table of a partition: a hash, so the partition string never reaches a name or path."""
    return f"p_{sha256_hex(partition)[:40]}"


def op_key(operation_id: str) -> str:
    """The row key of an operation's idempotency record."""
    return "o:" + sha256_hex(operation_id)


def dkey_of(text: str) -> str:
    """The duplicate-detection key of an item text: a hash of ``dedupe_key(text)``."""
    return sha256_hex(dedupe_key(text))[:32]


@dataclass(frozen=True)
class ItemRow:
    """The new state of one item row; ``text``/``vector`` are ``None`` for a tombstone."""

    n: int
    text: str | None
    vector: np.ndarray | None
    ts: int
    updated: int
    revision: int
    forgotten: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)
    created: int | None = None  # the item's creation sequence: ``NEW``, known, or None


@dataclass(frozen=True)
class Mutation:
    """Everything one write commits atomically."""

    items: Sequence[ItemRow] = ()
    op: OpRecord | None = None
    hwm: int | None = None  # new highest number, when the write assigns numbers
    result: dict[str, Any] = field(default_factory=dict)  # what the write answers
    records: Sequence[OpRecord] = ()  # other record rows it writes (a session's ledger)


@dataclass(frozen=True)
class Lookup:
    """The rows a write decides on, besides the head: its records, numbers and texts."""

    ops: Sequence[str] = ()  # op row keys
    numbers: Sequence[int] = ()  # item numbers it targets or asks for
    texts: Sequence[str] = ()  # texts it may duplicate

    def where(self) -> str:
        """The filter selecting those rows (every value is a hash, a hex key or an integer)."""
        keys = [HEAD_KEY, *self.ops, *(f"i:{int(n)}" for n in self.numbers)]
        clause = "key IN (" + ", ".join(f"'{k}'" for k in keys) + ")"
        if self.texts:
            clause += " OR dkey IN (" + ", ".join(f"'{dkey_of(t)}'" for t in self.texts) + ")"
        return clause


# How a write decides on the latest write view: the rows to commit, or a result to answer
# without writing (a replay, a duplicate).
Plan = Callable[[WriteView], Mutation | dict[str, Any]]
