"""Which stored facts a text probably restates, refines or supersedes: the hints a write
answers with, and the owners' groups of such facts.

The score is the plain cosine of the two embeddings: on the labelled pairs
(``tests/data/similar_pairs.jsonl``, ``notebooks/tune_similar.ipynb``) neither lexical evidence
nor centring separated restatements and supersessions from related but distinct facts any
better. A write lists a fact only when its cosine reaches the threshold *and* stands out from
the rest of the memory (``cutoff``): in a memory of long facts about one person nearly every
pair passes the threshold. semmem never merges or forgets on this guess; the model (or the
owner) decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semmem.items import Item, Vectors, iso
from semmem.store.views import ItemSet

# Chosen on the tune half of the labelled pairs by the notebook's rule (docs/consolidation.md).
SIMILAR_THRESHOLD = 0.40
MAX_SIMILAR = 3  # hints per write
# How far above the rest of the memory a listed fact must be: standard deviations of the
# write's similarity row without its MAX_SIMILAR best; chosen on the tune halves of both pair
# sets and two LoCoMo conversations (benchmarks/cases/quiet_hints.py, docs/consolidation.md).
STANDOUT = 2.75
# The least number of facts that rest must hold for its spread to mean anything; below it the
# threshold alone decides (a new memory).
STANDOUT_REST = 5
_BLOCK = 1024  # rows per block of the owners' all-pairs products


@dataclass(frozen=True)
class Near:
    """A stored fact near a text, with its cosine."""

    item: Item
    score: float

    def hint(self) -> dict[str, object]:
        """The entry of a write's ``similar`` list."""
        return {"n": self.item.n, "text": self.item.text, "score": round(self.score, 4)}


def cutoff(scores: Vectors, threshold: float, standout: float = STANDOUT) -> float:
    """The least cosine a fact is listed at, given a text's cosines to every fact of the
    memory: ``threshold``, raised to ``standout`` standard deviations above the mean of the
    rest of the row (all but its ``MAX_SIMILAR`` best, which are what could be listed)."""
    rest = scores.size - MAX_SIMILAR
    if rest < STANDOUT_REST:
        return threshold
    low = np.partition(scores, rest - 1)[:rest]
    return max(threshold, float(low.mean() + standout * low.std()))


def nearest(items: ItemSet, vector: Vectors, threshold: float, *, limit: int = MAX_SIMILAR,
            exclude: Collection[int] = ()) -> list[Near]:
    """The recallable items of ``items`` whose cosine to ``vector`` is at least ``threshold``,
    best first, at most ``limit``, leaving out the numbers in ``exclude``."""
    if not items.size:
        return []
    return _above(items, _scores(items, vector), threshold, limit, exclude)


def standing_out(items: ItemSet, vector: Vectors, threshold: float, *,
                 limit: int = MAX_SIMILAR, scores: Vectors | None = None
                 ) -> tuple[list[Near], float]:
    """The recallable items of a whole partition ``items`` that pass ``cutoff`` of its row
    (best first, at most ``limit``), and that cutoff (``scores``: the row, if computed)."""
    if not items.size:
        return [], threshold
    scores = _scores(items, vector) if scores is None else scores
    least = cutoff(scores, threshold)
    return _above(items, scores, least, limit, ()), least


def _scores(items: ItemSet, vector: Vectors) -> Vectors:
    out: Vectors = items.vectors @ np.asarray(vector, np.float32).reshape(-1)
    return out


class Rows:
    """Each text's cosines to a whole item set, the texts that ask within one turn of the event
    loop scored together: concurrent writes (their texts come back from one model call) read
    the set's vectors once in one matrix product, where one product per text read them again
    each time (at 10k facts: 0.53 ms a text alone, 0.15 ms each for eight together)."""

    def __init__(self) -> None:
        self._asked: dict[int, tuple[ItemSet, list[tuple[Vectors, asyncio.Future[Vectors]]]]] = {}
        self.products = 0  # products computed (for tests)

    async def of(self, items: ItemSet, vector: Vectors) -> Vectors:
        """``vector``'s cosine to every item of ``items``."""
        loop = asyncio.get_running_loop()
        asked = self._asked.get(id(items))
        if asked is None:  # the first text of this turn: scored once the others have asked
            asked = self._asked[id(items)] = (items, [])
            loop.call_soon(self._score, id(items))
        future: asyncio.Future[Vectors] = loop.create_future()
        asked[1].append((np.asarray(vector, np.float32).reshape(-1), future))
        return await future

    def _score(self, key: int) -> None:
        items, asked = self._asked.pop(key)
        self.products += 1
        try:
            if len(asked) == 1:
                rows = [_scores(items, asked[0][0])]
            else:
                block = items.vectors @ np.stack([v for v, _ in asked], axis=1)
                rows = [np.ascontiguousarray(block[:, i]) for i in range(len(asked))]
        except Exception as exc:  # each asker hears it
            for _, future in asked:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), row in zip(asked, rows, strict=True):
            if not future.done():
                future.set_result(row)


def _above(items: ItemSet, scores: Vectors, threshold: float, limit: int,
           exclude: Collection[int]) -> list[Near]:
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
class Member(Near):
    """A fact of an owners' group: ``score`` is its cosine to ``to``, its best match."""

    to: int


@dataclass(frozen=True)
class Group:
    """Facts that probably say the same thing, or where a newer one replaced the others:
    newest first, each with its best match in the group and their cosine."""

    members: list[Member]

    @property
    def strongest(self) -> float:
        """The cosine of the group's closest pair."""
        return max(m.score for m in self.members)

    def public(self) -> dict[str, object]:
        """The group as the CLI's ``--json`` and the admin API show it."""
        return {"facts": [{**m.hint(), "to": m.to, "updatedAt": iso(m.item.updated)}
                          for m in self.members]}


Neighbours = Callable[[list[int]], list[tuple[npt.NDArray[np.int64], Vectors]]]


def groups(items: ItemSet, threshold: float, neighbours: Neighbours | None = None
           ) -> list[Group]:
    """The recallable items in groups of likely restatements and supersessions.

    Strongest links first: every fact joins its best match when their cosine reaches
    ``threshold``, and a group is what those links connect; groups come in the order of their
    closest pair, members newest first. ``neighbours`` gives, for a block of rows of
    ``items``, each row's candidate rows and cosines (a partition's vector index); without it
    every pair is scored once, in blocks of matrix products against the later rows, never a
    Python double loop.
    """
    shown = np.array([i for i, it in enumerate(items.items) if it.surfaced], dtype=np.int64)
    if shown.size < 2:
        return []
    if neighbours is None:
        best, partner = _best_matches(items.vectors[shown])
    else:
        best, partner = _best_neighbours(shown, len(items.items), neighbours)
    return _linked(items, shown, best, partner, threshold)


def _best_matches(vectors: Vectors) -> tuple[Vectors, npt.NDArray[np.int64]]:
    """Each row's greatest cosine to another row, and that row: each pair scored once (a
    block of rows against itself and the rows after it; the columns' best updated too)."""
    size = len(vectors)
    best = np.full(size, -np.inf, dtype=np.float32)
    partner = np.full(size, -1, dtype=np.int64)
    for start in range(0, size, _BLOCK):
        stop = min(start + _BLOCK, size)
        products = vectors[start:stop] @ vectors[start:].T
        np.fill_diagonal(products[:, :stop - start], -np.inf)  # a fact is not its own match
        rows = products.argmax(axis=1)
        _improve(best, partner, np.arange(start, stop), products[np.arange(stop - start), rows],
                 rows + start)
        cols = products.argmax(axis=0)
        _improve(best, partner, np.arange(start, size),
                 products[cols, np.arange(size - start)], cols + start)
    return best, partner


def _improve(best: Vectors, partner: npt.NDArray[np.int64], rows: npt.NDArray[np.int64],
             scores: Vectors, matches: npt.NDArray[np.int64]) -> None:
    better = scores > best[rows]
    best[rows[better]] = scores[better]
    partner[rows[better]] = matches[better]


def _best_neighbours(shown: npt.NDArray[np.int64], total: int, neighbours: Neighbours
                     ) -> tuple[Vectors, npt.NDArray[np.int64]]:
    """Each shown row's best recallable match among its index neighbours."""
    position = np.full(total, -1, dtype=np.int64)
    position[shown] = np.arange(shown.size)
    best = np.full(shown.size, -np.inf, dtype=np.float32)
    partner = np.full(shown.size, -1, dtype=np.int64)
    for start in range(0, shown.size, _BLOCK):
        block = [int(r) for r in shown[start:start + _BLOCK]]
        for offset, (cols, scores) in enumerate(neighbours(block)):
            me = start + offset
            at = position[cols]
            keep = (at >= 0) & (at != me)
            if keep.any():
                top = int(np.argmax(scores[keep]))
                best[me], partner[me] = scores[keep][top], at[keep][top]
    return best, partner


def _linked(items: ItemSet, shown: npt.NDArray[np.int64], best: Vectors,
            partner: npt.NDArray[np.int64], threshold: float) -> list[Group]:
    """The groups the links of each fact to its best match (at least ``threshold``) make."""
    root = np.arange(shown.size)

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = int(root[i])
        return i

    linked = [int(i) for i in np.flatnonzero(best >= threshold)]
    for i in linked:
        root[find(i)] = find(int(partner[i]))
    links = {i: (int(partner[i]), float(best[i])) for i in linked}
    for i in linked:  # a match the index did not link back (approximate search) still shows
        links.setdefault(int(partner[i]), (i, float(best[i])))
    members: dict[int, list[Member]] = {}
    for i, (match, score) in links.items():
        member = Member(items.items[shown[i]], score, items.items[shown[match]].n)
        members.setdefault(find(i), []).append(member)
    out = [Group(sorted(found, key=lambda m: (-m.item.updated, -m.item.n)))
           for found in members.values()]
    return sorted(out, key=lambda g: (-g.strongest, -g.members[0].item.updated))
