"""What ranking keeps per item set: built once per snapshot and, where it can be, carried
forward when the snapshot moves on (``evolve``) instead of being built again."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semmem.items import Item, Vectors
from semmem.ranking.cues import mentions_time
from semmem.ranking.lexical import Bm25Index
from semmem.store.reads.persistent import Grown, grown
from semmem.store.views import ItemSet


@dataclass(frozen=True)
class Centred:
    """What centring needs per snapshot: O(n) numbers, no second copy of the vectors."""

    mean: npt.NDArray[np.float64]
    item_dot_mean: npt.NDArray[np.float64]  # v_i · μ'
    norms: npt.NDArray[np.float64]  # |v_i − μ'|
    item_dot_offset: npt.NDArray[np.float64] | None = None  # v_i · δ (the query offset)


def rank_text(item: Item) -> str:
    note = item.attrs.get("note")
    return f"{item.text} {note}" if isinstance(note, str) and note else item.text


def _squares(rows: Vectors) -> npt.NDArray[np.float64]:
    # Row by row (a reduction along each row alone): the same numbers whether computed for a
    # whole set or for rows appended to it.
    squares: npt.NDArray[np.float64] = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)
    return squares


@dataclass(frozen=True)
class Sums:
    """The share-independent part of centring: the rows' sum and squared norms. Evolves with
    a set (rows appended: the sum is a sequential row sum, so adding rows to it gives exactly
    a fresh sum; rows cut or changed: their old rows subtracted, which a fresh sum matches to
    float64 rounding), so a write does not cost the next recall a pass over every vector."""

    total: npt.NDArray[np.float64]
    squares: npt.NDArray[np.float64]
    buffer: Grown | None = None  # what ``squares`` is a view of, grown in place by appends

    @classmethod
    def of(cls, vectors: Vectors) -> Sums:
        return cls(np.add.reduce(vectors, axis=0, dtype=np.float64), _squares(vectors))

    def evolve(self, old: ItemSet, new: ItemSet, appended: range, changed: list[int],
               removed: list[int]) -> Sums:
        """These sums for ``new``: ``old`` with rows ``removed`` (old rows) cut, rows
        ``changed`` (new rows) replaced and rows ``appended``."""
        total = self.total.copy()
        edits = []
        for row in changed:
            before = old.index_of(new.items[row].n)
            if before is not None and not np.array_equal(old.vectors[before], new.vectors[row]):
                edits.append(row)
                total -= old.vectors[before]
                total += new.vectors[row]
        for row in removed:
            total -= old.vectors[row]
        rows = new.vectors[appended.start:appended.stop]
        for row in rows:
            total += row
        if not edits and not removed:
            squares, buffer = grown(self.buffer, self.squares, _squares(rows))
            return Sums(total, squares, buffer)
        kept = np.delete(self.squares, removed) if removed else self.squares.copy()
        kept[edits] = _squares(new.vectors[edits])
        squares, buffer = grown(None, kept, _squares(rows))
        return Sums(total, squares, buffer)


def centred(snap: ItemSet, share: float,
            offset: npt.NDArray[np.float64] | None = None) -> Centred:
    """The set's mean times ``share`` and what centring on it needs (with ``offset``, the
    model's query offset, each row's dot product with it too: one pass over the vectors)."""
    sums = snap.cached("sums", lambda s: Sums.of(s.vectors))
    mean = sums.total / max(snap.size, 1) * share
    with_offset = None
    if offset is None:
        dots = (snap.vectors @ mean.astype(np.float32)).astype(np.float64)
    else:
        both = (snap.vectors @ np.stack([mean, offset], axis=1).astype(np.float32))
        dots, with_offset = both[:, 0].astype(np.float64), both[:, 1].astype(np.float64)
    norms = np.sqrt(np.maximum(sums.squares - 2 * dots + mean @ mean, 0.0))
    norms[norms == 0] = 1.0
    return Centred(mean, dots, norms, with_offset)


@dataclass(frozen=True)
class Lexical:
    """The BM25 index of a set's rank texts, evolving with the set (built again once removed
    documents' empty slots pass a quarter of the set)."""

    index: Bm25Index

    def evolve(self, old: ItemSet, new: ItemSet, appended: range, changed: list[int],
               removed: list[int]) -> Lexical:
        """This index for ``new``: ``old`` with rows ``removed`` (old rows) cut, rows
        ``changed`` (new rows) replaced and rows ``appended``."""
        ix = self.index
        if ix.empty_slots + len(removed) > max(64, new.size // 4):
            return Lexical(Bm25Index.build([rank_text(it) for it in new.items], ix.k1, ix.b,
                                           stemming=ix.stemming))
        changes = {}
        for i in changed:
            before = old.get(new.items[i].n)
            if before is not None:
                changes[i] = (rank_text(before), rank_text(new.items[i]))
        return Lexical(ix.evolved(
            [rank_text(new.items[i]) for i in appended], changes,
            {i: rank_text(old.items[i]) for i in removed}))


@dataclass(frozen=True)
class Timed:
    """1 for the items of a set that name a time, else 0; built from the lexical index's
    vocabulary, then carried forward: a new or changed item is tokenised alone."""

    flags: npt.NDArray[np.float32]
    stemming: bool

    def evolve(self, old: ItemSet, new: ItemSet, appended: range, changed: list[int],
               removed: list[int]) -> Timed:
        """These flags for ``new``: ``old``'s with rows ``removed`` (old rows) cut, rows
        ``changed`` (new rows) and ``appended`` computed from their texts."""
        kept = np.delete(self.flags, removed) if removed else self.flags.copy()
        for row in changed:
            kept[row] = mentions_time(rank_text(new.items[row]), stemming=self.stemming)
        added = np.array([mentions_time(rank_text(new.items[row]), stemming=self.stemming)
                          for row in appended], np.float32)
        return Timed(np.concatenate([kept, added]), self.stemming)
