"""What ranking keeps per item set: built once per snapshot and, where it can be, carried
forward when the snapshot moves on (``evolve``) instead of being built again."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semmem.items import Item, Vectors
from semmem.ranking.lexical import Bm25Index
from semmem.store.views import ItemSet


@dataclass(frozen=True)
class Centred:
    """What centring needs per snapshot: O(n) numbers, no second copy of the vectors."""

    mean: npt.NDArray[np.float64]
    item_dot_mean: npt.NDArray[np.float64]  # v_i · μ'
    norms: npt.NDArray[np.float64]  # |v_i − μ'|


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
    a fresh sum), so a write does not cost the next recall a pass over every vector."""

    total: npt.NDArray[np.float64]
    squares: npt.NDArray[np.float64]

    @classmethod
    def of(cls, vectors: Vectors) -> Sums:
        return cls(np.add.reduce(vectors, axis=0, dtype=np.float64), _squares(vectors))

    def evolve(self, old: ItemSet, new: ItemSet, appended: range,
               changed: list[int]) -> Sums | None:
        """These sums for ``new``: ``old`` with rows ``appended`` (none ``changed``)."""
        if changed:
            return None
        total = self.total.copy()
        rows = new.vectors[appended.start:appended.stop]
        for row in rows:
            total += row
        return Sums(total, np.concatenate([self.squares, _squares(rows)]))


def centred(snap: ItemSet, share: float) -> Centred:
    sums = snap.cached("sums", lambda s: Sums.of(s.vectors))
    mean = sums.total / max(snap.size, 1) * share
    dots = (snap.vectors @ mean.astype(np.float32)).astype(np.float64)
    norms = np.sqrt(np.maximum(sums.squares - 2 * dots + mean @ mean, 0.0))
    norms[norms == 0] = 1.0
    return Centred(mean, dots, norms)


@dataclass(frozen=True)
class Lexical:
    """The BM25 index of a set's rank texts, evolving with the set."""

    index: Bm25Index

    def evolve(self, old: ItemSet, new: ItemSet, appended: range,
               changed: list[int]) -> Lexical:
        """This index for ``new``: ``old`` with rows ``appended`` and rows ``changed``."""
        return Lexical(self.index.evolved(
            [rank_text(new.items[i]) for i in appended],
            {i: (rank_text(old.items[i]), rank_text(new.items[i])) for i in changed}))
