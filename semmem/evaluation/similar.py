"""Calibration of the write-time hints (``similar``) on labelled fact pairs, and what the hints
do on a real conversation loaded fact by fact.

A pair file holds JSON lines ``{"id", "class", "old", "new", "split"}``: ``class`` is
``restatement``, ``supersession``, ``related`` or ``unrelated``; ``split`` is ``tune`` (the
threshold is chosen there) or ``held_out`` (it is only reported there). A pair is *listed* at a
threshold when the cosine of its two texts' embeddings reaches it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semmem.embedding.embedder import Embedder
from semmem.errors import InvalidInput

CLASSES = ("restatement", "supersession", "related", "unrelated")
# The targets: the least share of each class a threshold must list (None: at most that share).
TARGETS = {"restatement": 95.0, "supersession": 85.0}
UNRELATED_AT_MOST = 5.0
STEP = 0.01  # thresholds are chosen on this grid


@dataclass(frozen=True)
class Pair:
    """One labelled pair: a stored fact, the text written after it, and what the second is."""

    id: str
    kind: str
    old: str
    new: str
    split: str


def load_pairs(path: Path) -> list[Pair]:
    """The pairs of a JSONL file.

    Raises:
        InvalidInput: a line that is not a pair of a known class and split.
    """
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            pair = Pair(str(raw["id"]), raw["class"], raw["old"], raw["new"], raw["split"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{path}:{number}: not a labelled pair ({exc})") from None
        if pair.kind not in CLASSES or pair.split not in ("tune", "held_out"):
            raise InvalidInput(f"{path}:{number}: unknown class or split")
        pairs.append(pair)
    return pairs


def cosines(embedder: Embedder, pairs: Sequence[Pair]) -> np.ndarray:
    """The cosine of each pair's two texts."""
    old = embedder.embed_batch([p.old for p in pairs])
    new = embedder.embed_batch([p.new for p in pairs])
    out: np.ndarray = np.einsum("ij,ij->i", old.astype(np.float64), new.astype(np.float64))
    return out


def listed(scores: np.ndarray, pairs: Sequence[Pair], split: str, kind: str,
           threshold: float) -> float:
    """The share (%) of ``split``'s pairs of ``kind`` listed at ``threshold``."""
    mask = np.array([p.split == split and p.kind == kind for p in pairs])
    return float(100 * np.mean(scores[mask] >= threshold)) if mask.any() else float("nan")


def meets_targets(scores: np.ndarray, pairs: Sequence[Pair], split: str,
                  threshold: float) -> bool:
    """Whether ``threshold`` meets every target on ``split``."""
    return (all(listed(scores, pairs, split, kind, threshold) >= least
                for kind, least in TARGETS.items())
            and listed(scores, pairs, split, "unrelated", threshold) <= UNRELATED_AT_MOST)


def choose(scores: np.ndarray, pairs: Sequence[Pair]) -> float:
    """The threshold, from the tune pairs alone: the middle of the thresholds (on the grid)
    that meet every target there, the one with the most room on both sides (a higher one
    lists fewer related facts, until restatements or supersessions fall short; a lower one
    lists more of both, until unrelated facts pass). Without such a threshold, the one that
    comes closest (the least total shortfall)."""
    grid = [round(t, 2) for t in np.arange(-0.2, 1.0 + STEP / 2, STEP)]
    feasible = [t for t in grid if meets_targets(scores, pairs, "tune", t)]
    if feasible:
        return round(float(np.median(feasible)), 2)

    def shortfall(t: float) -> float:
        missed = sum(max(0.0, least - listed(scores, pairs, "tune", kind, t))
                     for kind, least in TARGETS.items())
        return missed + max(0.0, listed(scores, pairs, "tune", "unrelated", t)
                            - UNRELATED_AT_MOST)

    return min(grid, key=lambda t: (shortfall(t), -t))


def table(scores: np.ndarray, pairs: Sequence[Pair], threshold: float) -> str:
    """Listed share per class and split at ``threshold``, as printed lines."""
    lines = [f"threshold {threshold:.2f}: share listed (%)",
             f"{'class':14} {'tune':>6} {'held out':>9} {'pairs':>6}"]
    for kind in CLASSES:
        count = sum(p.kind == kind for p in pairs)
        lines.append(f"{kind:14} {listed(scores, pairs, 'tune', kind, threshold):6.1f} "
                     f"{listed(scores, pairs, 'held_out', kind, threshold):9.1f} {count:6}")
    return "\n".join(lines)
