"""A partition snapshot brought forward by the rows that changed since it was built, instead of
a rebuild: after this process's own commit (its rows are known) or after another writer's
(the rows with a newer write sequence, read as a delta).

New numbers above every live one are appended (the common case: remember); items changed in
place keep their row; a forgotten item's row goes. Ranking's derived structures that know how
(``evolve``) follow appended and changed rows; the others are rebuilt when next needed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from semmem.items import Item, Vectors, dedupe_key
from semmem.store.views import Head, OpRecord, PartitionSnapshot, Tombstone, key_rank


class RowBuffer:
    """Vectors with room to grow: snapshots are views of its first rows, and the newest one
    may append in place (older views never see rows past their own length)."""

    def __init__(self, vectors: Vectors, more: Vectors | None = None) -> None:
        """A buffer of ``vectors`` followed by ``more``, copied once, with room for as many
        again (pages of the room are only touched when rows land there)."""
        rows, dim = vectors.shape
        extra = 0 if more is None else len(more)
        self.array = np.empty((max(16, (rows + extra) * 2), dim), np.float32)
        self.array[:rows] = vectors
        if more is not None:
            self.array[rows:rows + extra] = more
        self.filled = rows + extra
        self.lock = threading.Lock()

    def extend(self, length: int, rows: Vectors) -> Vectors | None:
        """The first ``length`` rows followed by ``rows``, in place when the view of ``length``
        rows is the newest and there is room; ``None`` otherwise."""
        with self.lock:
            end = length + len(rows)
            if self.filled != length or end > len(self.array):
                return None
            self.array[length:end] = rows
            self.filled = end
            return self.array[:end]


def evolve(snap: PartitionSnapshot, head: Head, items: Sequence[Item], vectors: Vectors,
           tombstones: dict[int, Tombstone], ops: dict[str, OpRecord]) -> PartitionSnapshot:
    """``snap`` with ``items`` (new or changed live items, with their ``vectors``), items
    forgotten (``tombstones``) and records ``ops`` applied, at ``head``'s version."""
    by_n = snap.by_n
    gone = sorted(n for n in tombstones if n in by_n)
    last = snap.items[-1].n if snap.items else 0
    changed = [(it, v) for it, v in zip(items, vectors, strict=True) if it.n in by_n]
    added = sorted(((it, v) for it, v in zip(items, vectors, strict=True) if it.n not in by_n),
                   key=lambda pair: pair[0].n)
    new_tombs = {**snap.tombstones, **tombstones}
    new_ops = {**snap.ops, **ops}
    if gone or (added and added[0][0].n <= last):
        return _rebuilt(snap, head, changed + added, gone, new_tombs, new_ops)
    rows = [by_n[it.n] for it, _ in changed]
    new_items = list(snap.items)
    for row, (it, _) in zip(rows, changed, strict=True):
        new_items[row] = it
    new_items.extend(it for it, _ in added)
    new_vectors, buffer = _vectors(snap, rows, changed, added)
    new_by_n = dict(by_n)
    new_by_n.update((it.n, len(snap.items) + i) for i, (it, _) in enumerate(added))
    by_key = _keys(snap, changed, added)
    new = PartitionSnapshot(new_items, new_vectors, head, new_tombs, new_ops, by_n=new_by_n,
                            by_key=by_key, derived={"rows": buffer})
    appended = range(len(snap.items), len(new_items))
    derived = {}
    with snap._lock:  # ranking may be adding to it on another thread
        held = list(snap.derived.items())
    for name, value in held:
        step = getattr(value, "evolve", None)
        if step is not None:
            evolved = step(snap, new, appended, rows)
            if evolved is not None:
                derived[name] = evolved
    new.derived.update(derived)
    return new


def _vectors(snap: PartitionSnapshot, rows: list[int], changed: list[tuple[Item, Any]],
             added: list[tuple[Item, Any]]) -> tuple[Vectors, RowBuffer]:
    """The new vectors, as a view of a row buffer: appended in place when they can be."""
    extra = np.array([v for _, v in added], np.float32).reshape(-1, snap.vectors.shape[1])
    buffer = snap.derived.get("rows")
    if not rows and isinstance(buffer, RowBuffer):
        grown = buffer.extend(len(snap.items), extra)
        if grown is not None:
            return grown, buffer
    buffer = RowBuffer(snap.vectors, extra)  # older snapshots keep the rows changed here
    for row, (_, vector) in zip(rows, changed, strict=True):
        buffer.array[row] = vector
    return buffer.array[:buffer.filled], buffer


def _keys(snap: PartitionSnapshot, changed: list[tuple[Item, Any]],
          added: list[tuple[Item, Any]]) -> dict[str, int]:
    """The dedupe-key map after the change (``key_rank`` picks among equal keys, as in a
    fresh build); empty — rebuilt by the snapshot — when a changed item may have shadowed a
    duplicate."""
    by_key = dict(snap.by_key)
    if changed and len(by_key) < len(snap.items):  # duplicates exist: a removal is ambiguous
        return {}
    fresh = {it.n: it for it, _ in changed + added}
    for it, _ in changed:
        old = snap.get(it.n)
        if old is not None and by_key.get(dedupe_key(old.text)) == it.n:
            del by_key[dedupe_key(old.text)]
    for it, _ in changed + added:
        key = dedupe_key(it.text)
        held = by_key.get(key)
        current = None if held is None else fresh.get(held) or snap.get(held)
        if current is None or key_rank(current) < key_rank(it):
            by_key[key] = it.n
    return by_key


def _rebuilt(snap: PartitionSnapshot, head: Head, items: list[tuple[Item, Any]],
             gone: list[int], tombstones: dict[int, Tombstone],
             ops: dict[str, OpRecord]) -> PartitionSnapshot:
    """The general case (forgets, numbers below the highest): items and vectors in number
    order again; derived structures are rebuilt when next needed."""
    by_n = snap.by_n
    keep = dict(zip((it.n for it in snap.items), range(len(snap.items)), strict=True))
    for n in gone:
        keep.pop(n, None)
    fresh = {it.n: (it, v) for it, v in items}
    numbers = sorted(set(keep) | set(fresh))
    new_items: list[Item] = []
    vectors = np.empty((len(numbers), snap.vectors.shape[1]), np.float32)
    for row, n in enumerate(numbers):
        if n in fresh:
            new_items.append(fresh[n][0])
            vectors[row] = fresh[n][1]
        else:
            new_items.append(snap.items[by_n[n]])
            vectors[row] = snap.vectors[by_n[n]]
    return PartitionSnapshot(new_items, vectors, head, tombstones, ops)
