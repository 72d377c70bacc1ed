"""Ranking: which items of a snapshot matter for a query, in what order.

A separate, parameterised component so it can be tuned (``semmem eval``, the notebooks):

    score = semantic_weight · cos(q, item) + lexical_weight · bm25(q, item) / bm25_max(q)

Items scoring below ``min_score`` are left out even when budget remains. When packing, an item
whose cosine to an already chosen one is at least ``dedupe_threshold`` is skipped, so
near-duplicates do not eat the budget. Every knob is a ``SEMMEM_RANKING_*`` setting or a key of
a JSON ranking file (``--ranking FILE``).
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
from semmem.snapshot import Snapshot


class RankingConfig(BaseSettings):
    """Ranking knobs (env ``SEMMEM_RANKING_<NAME>``)."""

    model_config = SettingsConfigDict(env_prefix="SEMMEM_RANKING_", extra="forbid")

    semantic_weight: float = Field(1.0, ge=0, description="weight of cosine similarity")
    lexical_weight: float = Field(0.3, ge=0, description="weight of normalised BM25")
    min_score: float = Field(0.2, description="relevance floor on the combined score")
    dedupe_threshold: float = Field(
        0.95, gt=0, le=1.01, description="skip items this similar to one already chosen"
    )
    candidates: int = Field(400, ge=1, description="how many top items packing looks at")

    @classmethod
    def from_file(cls, path: Path) -> RankingConfig:
        """Load a JSON ranking file (as written by the tuning notebook); env does not apply."""
        data = json.loads(path.read_text())
        return cls.model_validate(data)

    def to_file(self, path: Path) -> None:
        """Write the knobs as JSON."""
        path.write_text(json.dumps(self.model_dump(), indent=2) + "\n")


@dataclass(frozen=True)
class Scored:
    """One candidate with its scores."""

    index: int
    item: Item
    score: float
    semantic: float
    lexical: float


def _bm25(snap: Snapshot) -> Bm25Index:
    return Bm25Index.build([_rank_text(item) for item in snap.items])


def _rank_text(item: Item) -> str:
    note = item.attrs.get("note")
    return f"{item.text} {note}" if isinstance(note, str) and note else item.text


class Ranker:
    """Scores a snapshot's items against a query."""

    def __init__(self, config: RankingConfig | None = None) -> None:
        self.config = config or RankingConfig()

    def score(
        self, snap: Snapshot, query_vec: npt.NDArray[np.float32], query: str
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Combined, semantic and normalised lexical scores of every live item."""
        semantic = snap.vectors @ query_vec.reshape(-1)
        cfg = self.config
        if cfg.lexical_weight > 0 and snap.count:
            raw, best = snap.cached("bm25", _bm25).scores(query)
            lexical = raw / best if best > 0 else raw
        else:
            lexical = np.zeros(snap.count, dtype=np.float32)
        combined = cfg.semantic_weight * semantic + cfg.lexical_weight * lexical
        return combined.astype(np.float32), semantic, lexical.astype(np.float32)

    def rank(
        self, snap: Snapshot, query_vec: npt.NDArray[np.float32], query: str, *, floor: bool = True
    ) -> list[Scored]:
        """Items above the floor (unless ``floor`` is false), best first, at most ``candidates``."""
        if not snap.count:
            return []
        combined, semantic, lexical = self.score(snap, query_vec, query)
        k = min(self.config.candidates, snap.count)
        top = np.argpartition(-combined, k - 1)[:k] if k < snap.count else np.arange(snap.count)
        order = top[np.lexsort((top, -combined[top]))]
        out = []
        for i in order:
            if floor and combined[i] < self.config.min_score:
                break
            out.append(
                Scored(int(i), snap.items[i], float(combined[i]), float(semantic[i]),
                       float(lexical[i]))
            )
        return out

    def without_near_duplicates(self, snap: Snapshot, ranked: list[Scored]) -> Iterator[Scored]:
        """Yield ``ranked`` lazily, skipping items too similar to one already yielded."""
        threshold = self.config.dedupe_threshold
        if threshold > 1.0:
            yield from ranked
            return
        kept: list[int] = []
        vectors: Vectors = snap.vectors
        for cand in ranked:
            if kept and float(np.max(vectors[kept] @ vectors[cand.index])) >= threshold:
                continue
            kept.append(cand.index)
            yield cand
