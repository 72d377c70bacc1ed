"""A partition snapshot brought forward by the rows that changed since it was built, instead of
a rebuild: after this process's own commit (its rows are known) or after another writer's
(the rows with a newer write sequence, read as a delta).

New numbers above every live one are appended (the common case: remember); items changed in
place keep their row; a forgotten item's row is cut. What the new snapshot holds is shared
with the old one wherever it did not change (``store/reads/persistent.py``): the item chunks not
touched, the vector and number buffers (appended to in place by the newest snapshot), the
dedupe-key index, the top layers of the tombstones and records. A write costs what it
changes, except the vectors of a text edit or a forget: one copy of the matrix (in numpy),
since every snapshot's vectors are one contiguous array. Ranking's derived structures that
know how (``evolve``) follow appended, changed and cut rows; the others are rebuilt when next
needed. A number below the highest live one (a restore, a repair) rebuilds the snapshot.

A partition read through its index has no snapshot, but what reads keep on its view (a
filter's counts) is carried the same way across this process's own commits (``carried``): by
each changed item's state before (the rows the write looked up) and after.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem.items import Item, Vectors
from semmem.store.reads.persistent import (
    Grown,
    ItemRows,
    KeyIndex,
    KeyMap,
    Layered,
    NumberMap,
    grown,
)
from semmem.store.views import (
    Head,
    OpRecord,
    PartitionSnapshot,
    Tombstone,
    WriteView,
    text_bytes,
)

if TYPE_CHECKING:
    from semmem.store.schema import Batch

# What a snapshot's lineage shares, kept among its derived structures.
_SHARED = ("rows", "numbers", "keys", "text_bytes")


def evolve(snap: PartitionSnapshot, head: Head, items: Sequence[Item], vectors: Vectors,
           tombstones: Mapping[int, Tombstone], ops: Mapping[str, OpRecord]
           ) -> PartitionSnapshot:
    """``snap`` with ``items`` (new or changed live items, with their ``vectors``), items
    forgotten (``tombstones``) and records ``ops`` applied, at ``head``'s version; ``snap``
    itself is left as it was (concurrent recalls may hold it)."""
    by_n = snap.by_n
    gone = sorted(row for row in (by_n.get(n) for n in tombstones) if row is not None)
    last = snap.items[-1].n if snap.items else 0
    changed = [(by_n[it.n], it, v) for it, v in zip(items, vectors, strict=True)
               if it.n in by_n]
    added = sorted(((it, v) for it, v in zip(items, vectors, strict=True) if it.n not in by_n),
                   key=lambda pair: pair[0].n)
    new_tombs = Layered.over(snap.tombstones, tombstones) if tombstones else snap.tombstones
    new_ops = Layered.over(snap.ops, ops) if ops else snap.ops
    if added and added[0][0].n <= last:
        return _rebuilt(snap, head, [(it, v) for _, it, v in changed] + added,
                        [snap.items[row].n for row in gone], new_tombs, new_ops)
    # Rows of the changed items once the forgotten ones are cut.
    moved = {row - bisect_left(gone, row): it for row, it, _ in changed}
    new_items = ItemRows.of(snap.items).changed(gone, moved, [it for it, _ in added])
    extra = np.array([v for _, v in added], np.float32).reshape(-1, snap.vectors.shape[1])
    new_vectors, rows = _vectors(snap, gone, changed, extra)
    new_numbers, numbers = _numbers(snap, gone, [it.n for it, _ in added])
    keys = snap.derived.get("keys")
    if not isinstance(keys, KeyIndex):
        keys = KeyIndex.of(snap.items, snap.by_key, snap.size)
    keys.add([it for _, it, _ in changed] + [it for it, _ in added])
    by_number = NumberMap(new_numbers)
    shared = {k: v for k, v in (("rows", rows), ("numbers", numbers), ("keys", keys))
              if v is not None}
    size = snap.derived.get("text_bytes")
    if isinstance(size, int):
        shared["text_bytes"] = (size + text_bytes([it for it, _ in added])
                                + text_bytes([it for _, it, _ in changed])
                                - text_bytes([snap.items[row] for row, _, _ in changed])
                                - text_bytes([snap.items[row] for row in gone]))
    new = PartitionSnapshot(new_items, new_vectors, head, new_tombs, new_ops, by_n=by_number,
                            by_key=KeyMap(keys, lambda n: _item(new_items, by_number, n)),
                            derived=shared)
    appended = range(len(new_items) - len(added), len(new_items))
    derived = {}
    with snap._lock:  # ranking may be adding to it on another thread
        held = [(k, v) for k, v in snap.derived.items() if k not in _SHARED]
    for name, value in held:
        step = getattr(value, "evolve", None)
        if step is not None:
            evolved = step(snap, new, appended, sorted(moved), gone)
            if evolved is not None:
                derived[name] = evolved
    new.derived.update(derived)
    return new


def _item(items: ItemRows, by_n: NumberMap, n: int) -> Item | None:
    row = by_n.get(n)
    return None if row is None else items[row]


def _vectors(snap: PartitionSnapshot, gone: list[int], changed: list[tuple[int, Item, Vectors]],
             extra: Vectors) -> tuple[Vectors, object]:
    """The new vectors: appended in place to the shared buffer when no row before them
    changes (a record edit keeps its vector), else one copy with the rows cut and changed."""
    old = snap.vectors
    edits = [(row, v) for row, _, v in changed if not np.array_equal(old[row], v)]
    if not gone and not edits:
        if not len(extra):
            return old, snap.derived.get("rows")
        return grown(snap.derived.get("rows"), old, extra)
    buffer = Grown(*_kept(old, gone), extra)  # one copy: older snapshots keep their rows
    for row, vector in edits:
        buffer.array[row - bisect_left(gone, row)] = vector
    return buffer.view, buffer


def _numbers(snap: PartitionSnapshot, gone: list[int], added: list[int]
             ) -> tuple[np.ndarray, object]:
    """The numbers in row order (what ``by_n`` searches), shared like the vectors."""
    held = snap.by_n
    if isinstance(held, NumberMap):
        current = held.numbers
    else:
        current = np.fromiter((it.n for it in snap.items), np.int64, snap.size)
    extra = np.array(added, np.int64)
    if not gone and not added:
        return current, snap.derived.get("numbers")
    if gone:
        fresh = Grown(*_kept(current, gone), extra)
        return fresh.view, fresh
    return grown(snap.derived.get("numbers"), current, extra)


def _kept(array: np.ndarray, gone: list[int]) -> list[np.ndarray]:
    """The runs of ``array``'s rows between the rows ``gone`` (views, not copies)."""
    runs, start = [], 0
    for row in gone:
        runs.append(array[start:row])
        start = row + 1
    runs.append(array[start:])
    return runs


def _rebuilt(snap: PartitionSnapshot, head: Head, items: list[tuple[Item, Vectors]],
             gone: list[int], tombstones: Mapping[int, Tombstone],
             ops: Mapping[str, OpRecord]) -> PartitionSnapshot:
    """The general case (numbers below the highest): items and vectors in number order
    again; derived structures are rebuilt when next needed."""
    by_n = snap.by_n
    keep = {it.n: row for row, it in enumerate(snap.items)}
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
    return PartitionSnapshot(new_items, vectors, head, dict(tombstones), dict(ops))


# An item's state before a commit and after it (``None``: not live).
Change = tuple[Item | None, Item | None]


def changes(batch: Batch, looked: WriteView | None, model: str) -> list[Change] | None:
    """What ``batch`` changed, item by item, given ``looked``, the rows it was decided on;
    ``None`` when they are not those rows (another version, or an item not looked up)."""
    if looked is None or looked.head != batch.head:
        return None
    items, _, tombstones = batch.changes(model)
    after: dict[int, Item | None] = {it.n: it for it in items}
    after.update(dict.fromkeys(tombstones))
    out: list[Change] = []
    for n, now in after.items():
        before = looked.get(n)
        if before is None and n <= batch.head.hwm and n not in looked.tombstones:
            return None  # a number the write did not look up: its state before is not known
        out.append((before, now))
    return out


def carried(derived: Mapping[str, Any], change: list[Change]) -> dict[str, Any]:
    """The structures of ``derived`` that know how (``evolve``), brought forward by
    ``change``; the others are left behind (built again when next needed)."""
    out = {}
    for name, value in derived.items():
        step = getattr(value, "evolve", None)
        if step is not None:
            out[name] = step(change)
    return out
