"""Ranking: which items of a snapshot matter for a query, in what order.

A separate, parameterised component so it can be tuned (``semmem eval``, the notebooks)::

    μ'        = centering · n / (n + centering_items) · mean of the partition's item vectors
    semantic  = cos(q − μ', item − μ')                  (cosine after removing the common part)
    lexical   = bm25(q, item) / max over items of bm25(q, ·)
    recency   = 0.5 ^ (age of the item's last update, relative to the newest, in half-lives)
    time      = 1 if the query asks when, the item names a time and cos(q, item) ≥ time_min_cosine
    score     = semantic_weight · semantic + lexical_weight · lexical + recency_weight · recency
                + time_weight · time

Items whose plain cosine similarity to the query is below ``min_score`` (or more than
``relative_floor`` below the best item's) are left out even when budget remains: noise costs
the model context. A query that names a time and nothing else ("what did I say in October?",
``span_first``) gets what was said in that time first, floor or not. When packing, an item
whose cosine to an already chosen one is at least ``dedupe_threshold`` is skipped, so
near-duplicates do not eat the budget; with ``packing="expected"`` the first lines are chosen
as the set with the most expected relevant facts (``relevance_model``) rather than in rank
order. Every knob is a ``SEMMEM_RANKING_*`` setting or a key of a JSON ranking file
(``--ranking FILE``); see ``docs/ranking.md`` for what each does and the figures that chose
the defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semmem.items import Item, Vectors, now_ms
from semmem.ranking.calendar import Window, inside, named
from semmem.ranking.config import RankingConfig as RankingConfig
from semmem.ranking.cues import (
    asks_assistant,
    asks_recent,
    asks_several,
    asks_when,
    is_time_term,
    names_only_time,
)
from semmem.ranking.lexical import Bm25Index
from semmem.ranking.packing import Packed, pack_candidates
from semmem.ranking.sets import Lexical, Timed, centred, rank_text
from semmem.ranking.turns import Turns, grouped_evidence, message_gap, spread_sessions
from semmem.store.views import ItemSet

_DAY_MS = 86_400_000
_DEDUPE_BLOCK = 32


# Not frozen: a frozen dataclass's __init__ sets every field through object.__setattr__, and a
# recall builds one per candidate (400): that was a fifth of ranking's own time at 10k items.
@dataclass(slots=True)
class Scored:
    """One candidate with its scores (``semantic`` is the plain cosine to the query)."""

    index: int
    item: Item
    score: float
    semantic: float
    lexical: float


def relevance_features(ranked: Sequence[Scored]) -> npt.NDArray[np.float64]:
    """What ``relevance_model`` weighs, per distinct candidate in rank order: 1, the score, its
    gap to the best score, the plain cosine, the lexical score and the log of the rank."""
    score = np.array([s.score for s in ranked], dtype=np.float64)
    return np.column_stack((
        np.ones_like(score), score, score[:1] - score,
        np.array([s.semantic for s in ranked], dtype=np.float64),
        np.array([s.lexical for s in ranked], dtype=np.float64),
        np.log(np.arange(1, len(ranked) + 1, dtype=np.float64)),
    ))


def _item_of(s: Scored) -> Item:
    return s.item


@dataclass(frozen=True, slots=True)
class _When:
    """What a query says of time: the spans it names, whether it names nothing else, and
    the moments it names."""

    spans: list[Window]
    only: bool
    moments: list[int]


def _said_then(rows: npt.NDArray[np.intp], combined: npt.NDArray[np.float32],
               at: npt.NDArray[np.float64], moments: list[int]) -> npt.NDArray[np.intp]:
    """``rows`` (said in the time a query names) in order: by whole days from the nearest
    moment it names when it names one, then best score first, then the lower number."""
    if not moments:
        return rows[np.lexsort((rows, -combined[rows]))]
    days = np.min(np.abs(at[rows][:, None] - np.array(moments, np.float64)[None, :]), axis=1)
    return rows[np.lexsort((rows, -combined[rows], np.floor(days / _DAY_MS)))]


def _best(rows: npt.NDArray[np.intp], combined: npt.NDArray[np.float32], k: int
          ) -> npt.NDArray[np.intp]:
    """The ``k`` of ``rows`` that score best, best first (ties to the lower number, so results
    never depend on row order)."""
    k = max(0, min(k, rows.size))
    if k < rows.size:
        rows = rows[np.argpartition(-combined[rows], k - 1)[:k]] if k else rows[:0]
    return rows[np.lexsort((rows, -combined[rows]))]


class Ranker:
    """Scores a snapshot's items against a query."""

    def __init__(self, config: RankingConfig | None = None,
                 clock: Callable[[], int] = now_ms) -> None:
        """Rank with ``config``, or with the tuned defaults (``SEMMEM_RANKING_*`` are read at
        start-up, by ``semmem.wiring``, not here); ``clock``: now, in epoch ms, that "two weeks
        ago" counts from (the wall clock; a benchmark's question gives its own date)."""
        self.config = config or RankingConfig.defaults()
        self.clock = clock

    def _semantic(
        self, snap: ItemSet, query_vec: Vectors, cosine: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        cfg = self.config
        share = cfg.centering * snap.count / (snap.count + cfg.centering_items)
        if share <= 0:
            return cosine
        query = query_vec.reshape(-1).astype(np.float64)
        offset = cfg.query_offset
        if offset is None:
            c = snap.cached(f"centred:{share!r}", lambda s: centred(s, share))
        else:  # each row's dot product with δ too, in the same pass over the vectors
            delta = np.asarray(offset, np.float64)
            c = snap.cached(f"centred:{share!r}:offset:{hash(offset)}",
                            lambda s: centred(s, share, delta))
        # (v − μ)·(q − μ) = v·q − v·μ − q·μ + μ·μ: only the plain cosine is O(n·dim).
        q_mean = float(query @ c.mean)
        mean_sq = float(c.mean @ c.mean)
        dots = cosine - c.item_dot_mean - q_mean + mean_sq
        q_sq = float(query @ query) - 2 * q_mean + mean_sq  # |q − μ|²
        if offset is not None:
            # The model's query offset o = share·δ leaves the query as well
            # (``semmem.ranking.calibration``): (v − μ)·(q − μ − o) adds −v·o + μ·o, and
            # |q − μ − o|² = |q − μ|² − 2(q − μ)·o + o·o.
            assert c.item_dot_offset is not None
            o = share * delta
            mean_o = float(c.mean @ o)
            dots = dots - share * c.item_dot_offset + mean_o
            q_sq += -2 * (float(query @ o) - mean_o) + float(o @ o)
        q_norm = float(np.sqrt(max(q_sq, 0.0))) or 1.0
        out: npt.NDArray[np.float32] = (dots / (c.norms * q_norm)).astype(np.float32)
        return out

    def _index(self, snap: ItemSet) -> Bm25Index:
        cfg = self.config
        key = f"bm25:{cfg.bm25_k1!r}:{cfg.bm25_b!r}:{cfg.stemming}"
        lexical = snap.cached(key, lambda s: Lexical(Bm25Index.build(
            [rank_text(it) for it in s.items], cfg.bm25_k1, cfg.bm25_b, stemming=cfg.stemming
        )))
        return lexical.index

    def _timed(self, snap: ItemSet) -> npt.NDArray[np.float32]:
        """1 for items that name a time, else 0 (from the lexical index's vocabulary)."""
        stemming = self.config.stemming
        index = self._index(snap)

        def build(_: ItemSet) -> Timed:
            found = index.containing(lambda t: is_time_term(t, stemming=stemming))
            return Timed(found.astype(np.float32), stemming)

        return snap.cached(f"timed:{stemming}", build).flags

    def _lexical(self, snap: ItemSet, query: str) -> npt.NDArray[np.float32]:
        raw, _ = self._index(snap).scores(query)
        top = float(raw.max()) if raw.size else 0.0
        # Relative to the best match in this partition: BM25's scale varies with the query
        # and the partition, and only the ordering it implies is comparable.
        return raw / top if top > 0 else raw

    def _recency(self, snap: ItemSet) -> npt.NDArray[np.float32]:
        half_life = self.config.recency_half_life_days * _DAY_MS

        def build(s: ItemSet) -> npt.NDArray[np.float32]:
            updated = np.array([it.updated for it in s.items], dtype=np.float64)
            age = (updated.max() - updated) / half_life
            weights: npt.NDArray[np.float32] = np.power(0.5, age).astype(np.float32)
            return weights

        return snap.cached(f"recency:{half_life!r}", build)

    def _when(self, query: str) -> _When:
        """The spans of time ``query`` names relative to now (when ``window_weight`` or
        ``span_first`` asks for them), whether it names nothing else, and the moments it
        names ("two weeks ago")."""
        cfg = self.config
        if cfg.window_weight <= 0 and not cfg.span_first:
            return _When([], False, [])
        found = named(query, self.clock())
        return _When([f.window for f in found],
                     names_only_time(query, [f.phrase for f in found]),
                     [f.at for f in found if f.at is not None])

    def score(
        self, snap: ItemSet, query_vec: npt.NDArray[np.float32], query: str
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Combined score, plain cosine and normalised lexical score of every live item."""
        return self._score(snap, query_vec, query, self._when(query).spans)

    def _score(
        self, snap: ItemSet, query_vec: npt.NDArray[np.float32], query: str, spans: list[Window]
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        cfg = self.config
        cosine = (snap.vectors @ query_vec.reshape(-1)).astype(np.float32)
        zeros = np.zeros(snap.count, dtype=np.float32)
        if not snap.count:
            return zeros, zeros, zeros
        combined = cfg.semantic_weight * self._semantic(snap, query_vec, cosine)
        lexical = self._lexical(snap, query) if cfg.lexical_weight > 0 else zeros
        combined = combined + cfg.lexical_weight * lexical
        if cfg.recency_weight > 0:
            combined = combined + cfg.recency_weight * self._recency(snap)
        if cfg.time_weight > 0 and asks_when(query):
            # Only for items already close to the input: a time alone makes no fact relevant.
            close = cosine >= cfg.time_min_cosine
            combined = combined + cfg.time_weight * self._timed(snap) * close
        turns = snap.cached("turns", Turns.of)
        if turns.any:
            combined = combined + self._piece_terms(turns, cosine, query, spans)
            if cfg.message_share > 0:
                combined = combined + cfg.message_share * message_gap(turns.message, combined)
        return combined.astype(np.float32), cosine, lexical.astype(np.float32)

    def _piece_terms(self, turns: Turns, cosine: npt.NDArray[np.float32], query: str,
                     spans: list[Window]) -> npt.NDArray[np.float32]:
        """What a piece's fields add to its score (0 for facts): see docs/ranking.md."""
        cfg = self.config
        out = np.zeros(len(cosine), np.float32)
        if cfg.assistant_weight > 0 and not asks_assistant(query):
            out -= cfg.assistant_weight * turns.assistant
        if cfg.session_weight > 0 or cfg.message_weight > 0:
            evidence = np.maximum(cosine - cfg.session_min_cosine, 0).astype(np.float32)
            lifted = evidence > 0  # only pieces that match themselves
            for weight, codes in ((cfg.session_weight, turns.session),
                                  (cfg.message_weight, turns.message)):
                if weight > 0:
                    out += weight * grouped_evidence(codes, evidence) * lifted
        if cfg.window_weight > 0 and spans:
            out += cfg.window_weight * (inside(turns.at, spans) & turns.piece)
        if cfg.recent_weight > 0 and asks_recent(query):
            newest = float(turns.at[turns.piece].max())
            age = (newest - turns.at) / (cfg.recent_half_life_days * _DAY_MS)
            out += cfg.recent_weight * np.power(0.5, np.maximum(age, 0)) * turns.piece
        return out

    def floor_of(self, cosine: npt.NDArray[np.float32]) -> float:
        """The cosine an item needs to be recalled, given every item's cosine to the query."""
        floor = self.config.min_score
        if self.config.relative_floor is not None and cosine.size:
            floor = max(floor, float(cosine.max()) - self.config.relative_floor)
        return floor

    def rank(
        self, snap: ItemSet, query_vec: npt.NDArray[np.float32], query: str, *, floor: bool = True,
        among: npt.NDArray[np.intp] | None = None,
    ) -> list[Scored]:
        """Items above the floor (unless ``floor`` is false), best first, at most ``candidates``
        (only rows ``among``, when given: a filter's, scored as in the whole set)."""
        if not snap.count:
            return []
        cfg = self.config
        when = self._when(query)
        combined, cosine, lexical = self._score(snap, query_vec, query, when.spans)
        everything = np.arange(snap.count) if among is None else among
        # A question that names a time and nothing else ("what did I say in October?"): what
        # was said then comes first, floor or not (the time is all it asks about; its wording
        # is close to nothing), nearest the moment it names first ("six weeks ago"), by score;
        # the rest follow as for any question.
        first = everything[:0]
        if cfg.span_first and when.only and when.spans:
            at = snap.cached("turns", Turns.of).at
            said_then = inside(at, when.spans)
            first, everything = everything[said_then[everything]], everything[
                ~said_then[everything]]
            first = _said_then(first, combined, at, when.moments)[:cfg.candidates]
        keep = everything[cosine[everything] >= self.floor_of(cosine)] if floor else everything
        order = np.concatenate((first, _best(keep, combined, cfg.candidates - first.size)))
        if cfg.session_spread > 0 and cfg.spread_lines > 0 and asks_several(query) \
                and not first.size:
            turns = snap.cached("turns", Turns.of)
            if turns.any:
                order = np.asarray(spread_sessions(
                    order.tolist(), combined, turns, cfg.session_spread, cfg.spread_lines,
                ), dtype=np.intp)
        items = snap.items
        # Whole columns to Python at once: per-element numpy scalar conversions cost more than
        # everything else ranking does after the matrix product.
        return [
            Scored(i, items[i], score, semantic, lex)
            for i, score, semantic, lex in zip(
                order.tolist(), combined[order].tolist(), cosine[order].tolist(),
                lexical[order].tolist(), strict=True,
            )
        ]

    def relevance(self, ranked: Sequence[Scored]) -> list[float]:
        """P(relevant) of each of the best distinct candidates, given in rank order."""
        if not ranked:
            return []
        z = relevance_features(ranked) @ np.asarray(self.config.relevance_model, np.float64)
        p: list[float] = (1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))).tolist()
        return p

    def pack(
        self, snap: ItemSet, ranked: list[Scored], max_bytes: int, max_items: int, *,
        distinct: bool = False,
    ) -> tuple[Packed, list[Scored]]:
        """Render ``ranked`` (from ``rank``) within ``max_bytes``, near-duplicates skipped
        (``distinct``: ``ranked`` has been through ``without_near_duplicates`` already).

        ``packing="expected"`` chooses the first lines as a set (``pack_candidates``) by
        ``relevance``; lines stay in rank order.
        """
        expected = self.config.packing == "expected"
        return pack_candidates(
            ranked, _item_of, max_bytes, max_items,
            None if distinct else lambda cands: self.without_near_duplicates(snap, list(cands)),
            self.relevance if expected else None, self.config.pack_choose_among,
        )

    def without_near_duplicates(self, snap: ItemSet, ranked: list[Scored]) -> Iterator[Scored]:
        """Yield ``ranked`` lazily, skipping items too similar to one already yielded."""
        threshold = self.config.dedupe_threshold
        if threshold > 1.0 or len(ranked) < 2:
            yield from ranked
            return
        vectors: Vectors = snap.vectors
        # Rows kept so far, grown per block: packing usually stops within the first block or
        # two, so a buffer for every candidate would mostly be allocated and faulted in for
        # nothing.
        kept = np.empty((0, vectors.shape[1]), dtype=np.float32)
        # Candidates go in blocks: one matrix product against everything kept so far and one
        # within the block, then a cheap sequential pass; same result as one-by-one.
        for start in range(0, len(ranked), _DEDUPE_BLOCK):
            block = ranked[start:start + _DEDUPE_BLOCK]
            rows = vectors[[c.index for c in block]]
            # blocked: positions in the block too similar to a row kept so far; later[i]: the
            # positions after i too similar to it, blocked once i is kept. Plain Python sets
            # and lists, since indexing the matrix per candidate costs microseconds each.
            blocked: set[int] = set()
            if len(kept):
                blocked.update(np.flatnonzero(np.any(rows @ kept.T >= threshold, axis=1)).tolist())
            first, second = np.nonzero(np.triu(rows @ rows.T >= threshold, 1))
            later: dict[int, list[int]] = {}
            for i, j in zip(first.tolist(), second.tolist(), strict=True):
                later.setdefault(i, []).append(j)
            chosen: list[int] = []
            for j, cand in enumerate(block):
                if j in blocked:
                    continue
                blocked.update(later.get(j, ()))
                chosen.append(j)
                yield cand
            if chosen:  # what later blocks are checked against
                kept = np.concatenate((kept, rows[chosen]))
