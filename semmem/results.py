"""What a recall and a search return, composed from ranked items and the byte budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from semmem import tracing
from semmem.audience import Caller, counted, not_models
from semmem.contract import MAX_SOURCES, TITLE_CHARS
from semmem.items import RECORD_FIELDS, Item, iso, one_line
from semmem.ranking.packing import pack
from semmem.ranking.ranker import Ranker, Scored
from semmem.store.views import IndexedView, ItemSet, ReadView

# An indexed partition's recall ranks as many candidates as its budget can use: one per
# ``CANDIDATE_BYTES`` of ``maxBytes``, at least ``MIN_CANDIDATES``, at most ``index_candidates``.
# Each candidate costs a read of its columns; on LoCoMo dev through the index, 50 candidates
# gave the gold recall of 100 at budgets up to 2 KB, not at 4 KB (docs/benchmarks.md).
CANDIDATE_BYTES = 40
MIN_CANDIDATES = 50


def recall_candidates(max_bytes: int, most: int) -> int:
    """How many of an indexed partition's nearest items a recall within ``max_bytes`` ranks
    (``most``: the ``index_candidates`` setting)."""
    return min(most, max(MIN_CANDIDATES, max_bytes // CANDIDATE_BYTES))


@dataclass(frozen=True)
class Recall:
    """What a host receives: rendered lines, one source per line, and the read cursor."""

    lines: list[str]
    sources: list[dict[str, str]]
    cursor: str
    scored: list[Scored]

    @property
    def text(self) -> str:
        """The recalled text: the lines joined by ``"\n"``."""
        return "\n".join(self.lines)

    def head(self, keep: int) -> Recall:
        """The first ``keep`` lines and their sources (the most relevant ones)."""
        return Recall(self.lines[:keep], self.sources[:keep], self.cursor, self.scored)

    def wire(self) -> dict[str, Any]:
        """The contract's recall response body."""
        return {"text": self.text, "sources": self.sources, "cursor": self.cursor}


def source_of(item: Item) -> dict[str, str]:
    """The contract's source entry for a recalled item."""
    return {
        "id": str(item.n),
        "title": one_line(item.text)[:TITLE_CHARS],
        "revision": str(item.revision),
        "updatedAt": iso(item.updated),
    }


def recent(items: Sequence[Item], max_bytes: int, cursor: str,
           hidden: frozenset[int] = frozenset()) -> Recall:
    """The most recently updated recallable items, newest first, within ``max_bytes``
    (``hidden``: numbers left out, the expired)."""
    ordered = sorted((it for it in items if it.surfaced and it.n not in hidden),
                     key=lambda it: (-it.updated, -it.n))
    with tracing.span("semmem.pack"):
        packed = pack(ordered, max_bytes, MAX_SOURCES)
    return Recall(packed.lines, [source_of(it) for it in packed.items], cursor, [])


def ranked(ranker: Ranker, items: ItemSet, qvec: np.ndarray, text: str,
           hidden: frozenset[int] = frozenset()) -> list[Scored]:
    """The recallable items above the relevance floor, best first, near-duplicates left out."""
    scored = [s for s in ranker.rank(items, qvec, text)
              if s.item.surfaced and s.item.n not in hidden]
    return list(ranker.without_near_duplicates(items, scored))


def relevant(ranker: Ranker, items: ItemSet, qvec: np.ndarray, text: str, max_bytes: int,
             cursor: str, hidden: frozenset[int] = frozenset(),
             among: npt.NDArray[np.intp] | None = None) -> Recall:
    """The items relevant to ``text`` within ``max_bytes``, best first (``hidden``: numbers
    left out, the expired; ``among``: the only rows considered, a filter's)."""
    with tracing.span("semmem.rank") as span:
        scored = [s for s in ranker.rank(items, qvec, text, among=among)
                  if s.item.surfaced and s.item.n not in hidden]
        span.set("semmem.rank.candidates", items.size)
    with tracing.span("semmem.pack") as span:
        packed, chosen = ranker.pack(items, scored, max_bytes, MAX_SOURCES)
        span.set("semmem.pack.lines", len(packed.items))
    return Recall(packed.lines, [source_of(it) for it in packed.items], cursor, chosen)


def shown_count(view: ReadView, hidden: frozenset[int] = frozenset()) -> int:
    """The live items a search tells the model its partition holds: its own audience's
    (``semmem.audience``: never the application's store items), the expired (``hidden``, a
    snapshot's numbers) left out."""
    apps = view.head.application
    if apps is None:  # not carried (a view of older code's head): a snapshot counts its own
        apps = 0 if isinstance(view, IndexedView) else not_models(view.items)
    expired = 0 if isinstance(view, IndexedView) else sum(
        1 for n in hidden if (it := view.get(n)) is not None and not it.application)
    return max(0, counted(Caller.MODEL, view.count, apps) - expired)


def search_entries(ranker: Ranker, items: ItemSet, qvec: np.ndarray, query: str,
                   limit: int, hidden: frozenset[int] = frozenset(),
                   among: npt.NDArray[np.intp] | None = None) -> list[dict[str, Any]]:
    """The ``limit`` items most similar to ``query``, with scores (no relevance floor;
    ``hidden``: numbers left out, the expired; ``among``: the only rows considered)."""
    out = []
    with tracing.span("semmem.rank") as span:
        found = ranker.rank(items, qvec, query, floor=False, among=among)
        # an application's store pieces never reach the model's search (``Item.application``)
        best = [s for s in found if s.item.n not in hidden and not s.item.application][:limit]
        span.set("semmem.rank.candidates", items.size)
    for s in best:
        entry: dict[str, Any] = {
            # The ranking's sum (cosine, lexical, time terms) can pass 1 (1.0021 for "units"
            # against "Prefers SI units"): shown within [-1, 1], the order is the ranking's.
            "n": s.item.n, "text": s.item.text, "score": round(min(max(s.score, -1.0), 1.0), 4),
            "updatedAt": iso(s.item.updated),
        }
        entry.update({k: s.item.attrs[k] for k in RECORD_FIELDS[:4] if k in s.item.attrs})
        if s.item.metadata:
            entry["metadata"] = s.item.metadata
        piece = s.item.piece
        if piece is not None:  # a conversation's piece: whose session, who said it, when
            entry.update({"sessionId": piece["session"], "role": piece["role"],
                          "at": piece["at"]})
        out.append(entry)
    return out
