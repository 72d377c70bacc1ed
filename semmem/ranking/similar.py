"""Which stored facts a text probably restates, refines or supersedes: the hints a write
answers with, and the owners' groups of such facts.

The score is the plain cosine of the two embeddings: on the labelled pairs
(``tests/data/similar_pairs.jsonl``, ``notebooks/tune_similar.ipynb``) neither lexical evidence
nor centring separated restatements and supersessions from related but distinct facts any
better. semmem never merges or forgets on this guess; the model (or the owner) decides.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semmem.items import Item, Vectors, iso
from semmem.store.views import ItemSet

# Chosen on the tune half of the labelled pairs by the notebook's rule (docs/consolidation.md).
SIMILAR_THRESHOLD = 0.40
MAX_SIMILAR = 3  # hints per write
_BLOCK = 1024  # rows per block of the owners' all-pairs products


@dataclass(frozen=True)
class Near:
    """A stored fact near a text, with its cosine."""

    item: Item
    score: float

    def hint(self) -> dict[str, object]:
        """The entry of a write's ``similar`` list."""
        return {"n": self.item.n, "text": self.item.text, "score": round(self.score, 4)}


def nearest(items: ItemSet, vector: Vectors, threshold: float, *, limit: int = MAX_SIMILAR,
            exclude: Collection[int] = ()) -> list[Near]:
    """The recallable items of ``items`` whose cosine to ``vector`` is at least ``threshold``,
    best first, at most ``limit``, leaving out the numbers in ``exclude``."""
    if not items.size:
        return []
    scores = items.vectors @ np.asarray(vector, np.float32).reshape(-1)
    above = np.flatnonzero(scores >= threshold)
    take = 4 * limit + len(exclude)  # room for hidden or excluded facts among the best
    if above.size > take:  # only the best few need sorting (a set of look-alike facts)
        best = above[np.argpartition(-scores[above], take)[:take]]
        found = _best_first(items, scores, best, limit, exclude)
        if len(found) == limit:
            return found
    return _best_first(items, scores, above, limit, exclude)


def _best_first(items: ItemSet, scores: Vectors, rows: npt.NDArray[np.intp], limit: int,
                exclude: Collection[int]) -> list[Near]:
    out: list[Near] = []
    for i in rows[np.argsort(-scores[rows], kind="stable")]:
        item = items.items[i]
        if item.surfaced and item.n not in exclude:
            out.append(Near(item, float(scores[i])))
            if len(out) == limit:
                break
    return out


@dataclass(frozen=True)
class Group:
    """Facts that probably say the same thing, or where the newest replaced the others: newest
    first, each scored by its cosine to the newest."""

    members: list[Near]

    def public(self) -> dict[str, object]:
        """The group as the CLI's ``--json`` and the admin API show it."""
        return {"facts": [{**near.hint(), "updatedAt": iso(near.item.updated)}
                          for near in self.members]}


Neighbours = Callable[[list[int]], list[tuple[npt.NDArray[np.int64], Vectors]]]


def groups(items: ItemSet, threshold: float, neighbours: Neighbours | None = None
           ) -> list[Group]:
    """The recallable items in groups of likely restatements and supersessions.

    Newest first: each fact not yet grouped takes every older ungrouped fact at least
    ``threshold`` similar to it, so a group is a star around its newest fact (no chains of
    loosely related facts). ``neighbours`` gives, for a block of rows of ``items``, each row's
    candidate rows and cosines (a partition's vector index); without it every pair is scored,
    in blocks of matrix products against the older facts only, never a Python double loop.
    """
    shown = [i for i, it in enumerate(items.items) if it.surfaced]
    if len(shown) < 2:
        return []
    order = np.array(sorted(shown, key=lambda i: (-items.items[i].updated, -items.items[i].n)))
    rank = np.full(len(items.items), -1, dtype=np.int64)
    rank[order] = np.arange(len(order))
    vectors = items.vectors[order]  # newest first: the older facts of row r are rows > r
    grouped = np.zeros(len(order), dtype=bool)
    out: list[Group] = []
    for start in range(0, len(order), _BLOCK):
        rows = [r for r in range(start, min(start + _BLOCK, len(order))) if not grouped[r]]
        if not rows:
            continue
        if neighbours is None:
            products = vectors[rows] @ vectors[start:].T
            found = [(np.flatnonzero(line >= threshold) + start, line)
                     for line in products]
            near = [(cols, line[cols - start]) for cols, line in found]
        else:
            near = [(rank[cols], scores)
                    for cols, scores in neighbours([int(order[r]) for r in rows])]
        for row, (cols, scores) in zip(rows, near, strict=True):
            if grouped[row]:  # taken by a newer fact of this block
                continue
            keep = (scores >= threshold) & (cols > row)
            keep[keep] &= ~grouped[cols[keep]]
            if not keep.any():
                continue
            picked = np.argsort(cols[keep], kind="stable")  # rank order: newest first
            members, member_scores = cols[keep][picked], scores[keep][picked]
            grouped[row] = True
            grouped[members] = True
            out.append(Group([Near(items.items[order[row]], 1.0)] + [
                Near(items.items[order[m]], float(sc))
                for m, sc in zip(members, member_scores, strict=True)]))
    return out
