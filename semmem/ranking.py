"""Ranking: which items of a snapshot matter for a query, in what order.

A separate, parameterised component so it can be tuned (``semmem eval``, the notebooks)::

    μ'        = centering · n / (n + centering_items) · mean of the partition's item vectors
    semantic  = cos(q − μ', item − μ')                  (cosine after removing the common part)
    lexical   = bm25(q, item) / max over items of bm25(q, ·)
    recency   = 0.5 ^ (age of the item's last update, relative to the newest, in half-lives)
    score     = semantic_weight · semantic + lexical_weight · lexical + recency_weight · recency

Items whose plain cosine similarity to the query is below ``min_score`` (or more than
``relative_floor`` below the best item's) are left out even when budget remains: noise costs
the model context. When packing, an item whose cosine to an already chosen one is at least
``dedupe_threshold`` is skipped, so near-duplicates do not eat the budget. Every knob is a
``SEMMEM_RANKING_*`` setting or a key of a JSON ranking file (``--ranking FILE``); see
``docs/ranking.md`` for what each does and the figures that chose the defaults.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from semmem.embedder import Vectors
from semmem.items import Item
from semmem.lexical import Bm25Index
from semmem.store.views import ItemSet

_DAY_MS = 86_400_000
_DEDUPE_BLOCK = 32


class RankingConfig(BaseSettings):
    """Ranking knobs (env ``SEMMEM_RANKING_<NAME>``); the defaults are tuned on LoCoMo dev."""

    model_config = SettingsConfigDict(env_prefix="SEMMEM_RANKING_", extra="forbid")

    semantic_weight: float = Field(1.0, ge=0, description="weight of the (centred) cosine")
    lexical_weight: float = Field(
        0.4, ge=0, description="weight of BM25, normalised by the best-matching item's score"
    )
    centering: float = Field(
        1.0, ge=0, le=1,
        description="share of the partition's mean vector removed before the cosine (0 = off)",
    )
    centering_items: float = Field(
        10.0, ge=0,
        description="shrinks centring in small partitions: the mean counts n / (n + this)",
    )
    stemming: bool = Field(True, description="light suffix stemming of lexical tokens")
    bm25_k1: float = Field(1.2, gt=0, description="BM25 term-frequency saturation")
    bm25_b: float = Field(0.75, ge=0, le=1, description="BM25 length normalisation")
    recency_weight: float = Field(
        0.0, ge=0, description="weight of recency (0.5 per half-life before the newest item)"
    )
    recency_half_life_days: float = Field(30.0, gt=0, description="half-life of recency")
    min_score: float = Field(
        0.1, ge=-1, le=1,
        description="relevance floor: items whose plain cosine to the input is below it are "
                    "never recalled",
    )
    relative_floor: float | None = Field(
        None, gt=0,
        description="also leave out items whose cosine is more than this below the best one's",
    )
    dedupe_threshold: float = Field(
        0.95, gt=0, le=1.01,
        description="skip items at least this similar to one already chosen (> 1 = off)",
    )
    candidates: int = Field(400, ge=1, description="how many top items packing looks at")

    @classmethod
    def from_file(cls, path: Path) -> RankingConfig:
        """Load a JSON ranking file (as written by the tuning notebook).

        The file is the whole configuration: knobs it leaves out take their defaults, and
        ``SEMMEM_RANKING_*`` variables do not apply.

        Raises:
            ValueError: not a JSON object, an unknown knob or a value out of range.
        """
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a ranking file is a JSON object of knobs")
        defaults = {name: field.get_default(call_default_factory=True)
                    for name, field in cls.model_fields.items()}
        # Every knob passed explicitly: init arguments take precedence over the environment.
        return cls(**{**defaults, **data})

    def to_file(self, path: Path) -> None:
        """Write the knobs as JSON."""
        path.write_text(json.dumps(self.model_dump(), indent=2) + "\n")

    @classmethod
    def plain_cosine(cls) -> RankingConfig:
        """The reference: cosine similarity only; no floor, no deduplication."""
        return cls.model_validate({
            "lexical_weight": 0.0, "centering": 0.0, "recency_weight": 0.0, "min_score": -1.0,
            "relative_floor": None, "dedupe_threshold": 1.01, "candidates": 1_000_000,
        })


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


@dataclass(frozen=True)
class _Centred:
    """What centring needs per snapshot: O(n) numbers, no second copy of the vectors."""

    mean: npt.NDArray[np.float64]
    item_dot_mean: npt.NDArray[np.float64]  # v_i · μ'
    norms: npt.NDArray[np.float64]  # |v_i − μ'|


def _rank_text(item: Item) -> str:
    note = item.attrs.get("note")
    return f"{item.text} {note}" if isinstance(note, str) and note else item.text


def _squares(rows: Vectors) -> npt.NDArray[np.float64]:
    # Row by row (a reduction along each row alone): the same numbers whether computed for a
    # whole set or for rows appended to it.
    squares: npt.NDArray[np.float64] = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)
    return squares


@dataclass(frozen=True)
class _Sums:
    """The share-independent part of centring: the rows' sum and squared norms. Evolves with
    a set (rows appended: the sum is a sequential row sum, so adding rows to it gives exactly
    a fresh sum), so a write does not cost the next recall a pass over every vector."""

    total: npt.NDArray[np.float64]
    squares: npt.NDArray[np.float64]

    @classmethod
    def of(cls, vectors: Vectors) -> _Sums:
        return cls(np.add.reduce(vectors, axis=0, dtype=np.float64), _squares(vectors))

    def evolve(self, old: ItemSet, new: ItemSet, appended: range,
               changed: list[int]) -> _Sums | None:
        """These sums for ``new``: ``old`` with rows ``appended`` (none ``changed``)."""
        if changed:
            return None
        total = self.total.copy()
        rows = new.vectors[appended.start:appended.stop]
        for row in rows:
            total += row
        return _Sums(total, np.concatenate([self.squares, _squares(rows)]))


def _centred(snap: ItemSet, share: float) -> _Centred:
    sums = snap.cached("sums", lambda s: _Sums.of(s.vectors))
    mean = sums.total / max(snap.size, 1) * share
    dots = (snap.vectors @ mean.astype(np.float32)).astype(np.float64)
    norms = np.sqrt(np.maximum(sums.squares - 2 * dots + mean @ mean, 0.0))
    norms[norms == 0] = 1.0
    return _Centred(mean, dots, norms)


@dataclass(frozen=True)
class _Lexical:
    """The BM25 index of a set's rank texts, evolving with the set."""

    index: Bm25Index

    def evolve(self, old: ItemSet, new: ItemSet, appended: range,
               changed: list[int]) -> _Lexical:
        """This index for ``new``: ``old`` with rows ``appended`` and rows ``changed``."""
        return _Lexical(self.index.evolved(
            [_rank_text(new.items[i]) for i in appended],
            {i: (_rank_text(old.items[i]), _rank_text(new.items[i])) for i in changed}))


class Ranker:
    """Scores a snapshot's items against a query."""

    def __init__(self, config: RankingConfig | None = None) -> None:
        self.config = config or RankingConfig()

    def _semantic(
        self, snap: ItemSet, query_vec: Vectors, cosine: npt.NDArray[np.float32]
    ) -> npt.NDArray[np.float32]:
        cfg = self.config
        share = cfg.centering * snap.count / (snap.count + cfg.centering_items)
        if share <= 0:
            return cosine
        c = snap.cached(f"centred:{share!r}", lambda s: _centred(s, share))
        # (v − μ)·(q − μ) = v·q − v·μ − q·μ + μ·μ: only the plain cosine is O(n·dim).
        query = query_vec.reshape(-1).astype(np.float64)
        q_mean = float(query @ c.mean)
        mean_sq = float(c.mean @ c.mean)
        q_norm = float(np.sqrt(max(float(query @ query) - 2 * q_mean + mean_sq, 0.0))) or 1.0
        dots = cosine - c.item_dot_mean - q_mean + mean_sq
        out: npt.NDArray[np.float32] = (dots / (c.norms * q_norm)).astype(np.float32)
        return out

    def _lexical(self, snap: ItemSet, query: str) -> npt.NDArray[np.float32]:
        cfg = self.config
        key = f"bm25:{cfg.bm25_k1!r}:{cfg.bm25_b!r}:{cfg.stemming}"
        lexical = snap.cached(key, lambda s: _Lexical(Bm25Index.build(
            [_rank_text(it) for it in s.items], cfg.bm25_k1, cfg.bm25_b, stemming=cfg.stemming
        )))
        raw, _ = lexical.index.scores(query)
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

    def score(
        self, snap: ItemSet, query_vec: npt.NDArray[np.float32], query: str
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Combined score, plain cosine and normalised lexical score of every live item."""
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
        return combined.astype(np.float32), cosine, lexical.astype(np.float32)

    def floor_of(self, cosine: npt.NDArray[np.float32]) -> float:
        """The cosine an item needs to be recalled, given every item's cosine to the query."""
        floor = self.config.min_score
        if self.config.relative_floor is not None and cosine.size:
            floor = max(floor, float(cosine.max()) - self.config.relative_floor)
        return floor

    def rank(
        self, snap: ItemSet, query_vec: npt.NDArray[np.float32], query: str, *, floor: bool = True
    ) -> list[Scored]:
        """Items above the floor (unless ``floor`` is false), best first, at most ``candidates``."""
        if not snap.count:
            return []
        combined, cosine, lexical = self.score(snap, query_vec, query)
        everything = np.arange(snap.count)
        keep = np.flatnonzero(cosine >= self.floor_of(cosine)) if floor else everything
        k = min(self.config.candidates, keep.size)
        if k < keep.size:
            keep = keep[np.argpartition(-combined[keep], k - 1)[:k]]
        # Best first; ties go to the lower number, so results never depend on row order.
        order = keep[np.lexsort((keep, -combined[keep]))]
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
