"""Which listing rule keeps the write-time hints quiet on dense memories: candidate rules on
top of the absolute threshold, measured on labelled pairs (each in a memory) and on LoCoMo
conversations loaded fact by fact, tuned on one half and reported on the other.

A rule maps the new text's similarity row (its cosine to every stored fact) and the
partition's own pairwise statistics to the least cosine a fact is listed at; a write lists the
``MAX_SIMILAR`` best facts at or above it. A pair counts as listed when its ``old`` fact is among
them, in a memory of every ``old`` text of its set (the long pairs: one memory per person, as
a memory of one conversation is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from semmem.evaluation.similar import CLASSES, TARGETS, UNRELATED_AT_MOST, Pair
from semmem.items import Vectors, dedupe_key
from semmem.ranking.similar import MAX_SIMILAR, SIMILAR_THRESHOLD, cutoff


@dataclass(frozen=True)
class Spread:
    """The pairwise cosines of a partition's facts, as running sums (what a view could keep
    and evolve with each write): how similar its facts are to each other."""

    pairs: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, row: Vectors) -> Spread:
        """The spread once the fact with cosines ``row`` to the others is stored."""
        return Spread(self.pairs + row.size, self.total + float(row.sum()),
                      self.squares + float((row * row).sum()))

    def mean_std(self) -> tuple[float, float]:
        """Mean and standard deviation of the pairwise cosines."""
        mean = self.total / max(self.pairs, 1)
        return mean, float(np.sqrt(max(self.squares / max(self.pairs, 1) - mean * mean, 0.0)))


Rule = Callable[[Vectors, Spread], float]


def threshold_only(t: float) -> Rule:
    """The absolute threshold ``t`` alone (today's rule at 0.40)."""
    return lambda row, spread: t


def centred(c: float) -> Rule:
    """``c`` above the row's mean (the cosine centred on the partition's mean vector)."""
    return lambda row, spread: max(SIMILAR_THRESHOLD, float(row.mean()) + c)


def margin(m: float) -> Rule:
    """``m`` above the best fact that could not be listed (the row's ``MAX_SIMILAR + 1``-th)."""
    def rule(row: Vectors, spread: Spread) -> float:
        if row.size <= MAX_SIMILAR:
            return SIMILAR_THRESHOLD
        fourth = np.partition(row, -MAX_SIMILAR - 1)[-MAX_SIMILAR - 1]
        return max(SIMILAR_THRESHOLD, float(fourth) + m)
    return rule


def row_z(k: float) -> Rule:
    """``k`` standard deviations above the whole row's mean."""
    return lambda row, spread: max(SIMILAR_THRESHOLD, float(row.mean() + k * row.std()))


def rest_z(k: float) -> Rule:
    """``k`` standard deviations above the rest of the row (without its best ``MAX_SIMILAR``):
    ``ranking.similar.cutoff``, the shipped rule at ``STANDOUT``."""
    return lambda row, spread: cutoff(row, SIMILAR_THRESHOLD, k)


def partition_z(k: float) -> Rule:
    """``k`` standard deviations above the mean pairwise cosine of the partition's facts (a
    per-partition calibration kept with the view)."""
    def rule(row: Vectors, spread: Spread) -> float:
        mean, std = spread.mean_std()
        return SIMILAR_THRESHOLD if spread.pairs < 10 else max(SIMILAR_THRESHOLD, mean + k * std)
    return rule


# Each candidate with the grid its parameter is tuned on.
CANDIDATES: dict[str, tuple[Callable[[float], Rule], Sequence[float]]] = {
    "threshold alone": (threshold_only, [round(0.40 + 0.02 * i, 2) for i in range(21)]),
    "centred on the row mean": (centred, [round(0.20 + 0.02 * i, 2) for i in range(16)]),
    "margin over the 4th best": (margin, [round(0.02 * i, 2) for i in range(11)]),
    "z over the whole row": (row_z, [round(1.5 + 0.125 * i, 3) for i in range(17)]),
    "z over the rest of the row": (rest_z, [round(1.5 + 0.125 * i, 3) for i in range(17)]),
    "z over the partition's pairs": (partition_z, [round(0.5 + 0.125 * i, 3) for i in range(17)]),
}


def _listed(row: Vectors, least: float) -> np.ndarray:
    above = np.flatnonzero(row >= least)
    return above[np.argsort(-row[above], kind="stable")][:MAX_SIMILAR]


@dataclass(frozen=True)
class Memory:
    """Labelled pairs in one memory: the ``old`` texts' vectors and each pair's ``new`` one."""

    pairs: list[Pair]
    rows: list[int]  # each pair's old fact, a row of ``olds``
    olds: Vectors
    news: Vectors
    spread: Spread


def memories(pairs: Sequence[Pair], embed: Callable[[list[str]], Vectors],
             key: Callable[[Pair], str] = lambda p: "") -> list[Memory]:
    """The pairs in memories by ``key`` (one memory for all by default)."""
    by: dict[str, list[Pair]] = {}
    for pair in pairs:
        by.setdefault(key(pair), []).append(pair)
    out = []
    for group in by.values():
        olds = list(dict.fromkeys(p.old for p in group))
        vectors = embed(olds)
        gram = vectors @ vectors.T
        upper = gram[np.triu_indices(len(olds), 1)]
        spread = Spread().add(upper)
        out.append(Memory(group, [olds.index(p.old) for p in group], vectors,
                          embed([p.new for p in group]), spread))
    return out


def shares(mems: Sequence[Memory], rule: Rule) -> dict[tuple[str, str], float]:
    """(split, class) → share (%) of pairs whose old fact the rule lists for the new text."""
    hits: dict[tuple[str, str], list[bool]] = {}
    for mem in mems:
        for pair, old, new in zip(mem.pairs, mem.rows, mem.news, strict=True):
            row = mem.olds @ new
            hits.setdefault((pair.split, pair.kind), []).append(
                old in _listed(row, rule(row, mem.spread)))
    return {key: 100 * float(np.mean(v)) for key, v in hits.items()}


def hints_per_remember(texts: Sequence[str], vectors: Vectors, rule: Rule) -> float:
    """Mean hints per remember when ``texts`` are remembered one by one (an exact duplicate
    answers ``existing`` without hints)."""
    seen: set[str] = set()
    kept: list[int] = []
    spread, total = Spread(), 0
    for i, text in enumerate(texts):
        if dedupe_key(text) in seen:
            continue
        if kept:
            row = vectors[kept] @ vectors[i]
            total += len(_listed(row, rule(row, spread)))
            spread = spread.add(row)
        seen.add(dedupe_key(text))
        kept.append(i)
    return total / max(len(texts), 1)


HINTS_AT_MOST = 0.8  # the target on a LoCoMo conversation


@dataclass(frozen=True)
class Point:
    """One rule at one parameter: pair shares per pair set and hints per conversation."""

    parameter: float
    pairs: dict[str, dict[tuple[str, str], float]]  # pair set → shares
    hints: dict[str, float]  # conversation → hints per remember

    def shortfall(self, split: str, conversations: Sequence[str]) -> float:
        """How far (percentage points, plus 100 × hints) ``split`` misses the targets."""
        missed = 0.0
        for got in self.pairs.values():
            missed += sum(max(0.0, least - got[(split, kind)]) for kind, least in TARGETS.items())
            missed += max(0.0, got[(split, "unrelated")] - UNRELATED_AT_MOST)
        return missed + sum(100 * max(0.0, self.hints[c] - HINTS_AT_MOST) for c in conversations)


def sweep(make: Callable[[float], Rule], grid: Sequence[float],
          pair_sets: dict[str, Sequence[Memory]],
          conversations: dict[str, tuple[Sequence[str], Vectors]]) -> list[Point]:
    """The rule at every parameter of ``grid``."""
    return [Point(p, {name: shares(mems, make(p)) for name, mems in pair_sets.items()},
                  {name: hints_per_remember(texts, vecs, make(p))
                   for name, (texts, vecs) in conversations.items()}) for p in grid]


def choose(points: Sequence[Point], tune_conversations: Sequence[str]) -> Point:
    """From the tune halves and the tune conversations alone: the middle of the parameters
    that meet every target there, else the closest (least shortfall, then the quieter)."""
    feasible = [p for p in points if p.shortfall("tune", tune_conversations) == 0]
    if feasible:
        return feasible[len(feasible) // 2]
    return min(points, key=lambda p: (p.shortfall("tune", tune_conversations),
                                      sum(p.hints[c] for c in tune_conversations)))


def row_of(point: Point, split: str, conversations: Sequence[str]) -> list[str]:
    """A table row: shares per pair set and class on ``split``, then hints per conversation."""
    cells = [f"{point.pairs[name][(split, kind)]:.0f}" for name in point.pairs for kind in CLASSES]
    return cells + [f"{point.hints[c]:.2f}" for c in conversations]
