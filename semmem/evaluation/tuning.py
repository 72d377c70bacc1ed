"""Sweeping ranking knobs and checking the choice by leave-one-partition-out.

The objective is the mean gold recall over the budgets that matter most (512, 1024 and 2048
bytes by default): one number, so a sweep can pick a setting, while the per-budget figures
stay visible in its rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from semmem.evaluation.harness import Outcome
from semmem.evaluation.metrics import Summary, summarise
from semmem.evaluation.runner import Evaluation
from semmem.ranking.ranker import Ranker, RankingConfig, relevance_features

OBJECTIVE_BUDGETS = (512, 1024, 2048)


def objective(summary: Summary, budgets: Sequence[int] = OBJECTIVE_BUDGETS) -> float:
    """Mean gold recall (0–1) over ``budgets`` (those the summary has)."""
    have = [b for b in budgets if b in summary.budgets] or list(summary.budgets)
    return sum(summary.gold_recall(b) for b in have) / len(have)


def grid(base: RankingConfig, knobs: Mapping[str, Iterable[Any]]) -> list[RankingConfig]:
    """Every combination of ``knobs`` values applied to ``base``."""
    names = list(knobs)
    out = []
    for values in itertools.product(*(list(knobs[n]) for n in names)):
        out.append(base.model_copy(update=dict(zip(names, values, strict=True))))
    return out


@dataclass(frozen=True)
class SweepRow:
    """One setting of a sweep and how it did."""

    config: RankingConfig
    changed: dict[str, Any]
    summary: Summary
    score: float


def sweep(
    evaluation: Evaluation, configs: Sequence[RankingConfig], base: RankingConfig | None = None
) -> list[SweepRow]:
    """Score every config (in memory); rows best first by ``objective``."""
    ref = (base or RankingConfig()).model_dump()
    rows = []
    for config in configs:
        summary = evaluation.summary(config)
        changed = {k: v for k, v in config.model_dump().items() if ref.get(k) != v}
        rows.append(SweepRow(config, changed, summary, objective(summary)))
    return sorted(rows, key=lambda r: -r.score)


@dataclass(frozen=True)
class Fold:
    """One leave-one-out fold: the setting chosen without a partition, scored on it."""

    held_out: str
    chosen: dict[str, Any]
    tuned: Summary
    default: Summary
    cosine: Summary
    outcomes: list[Outcome]  # the held-out partition's outcomes under the chosen setting


def leave_one_out(
    evaluation: Evaluation, configs: Sequence[RankingConfig], default: RankingConfig,
    *, calibrate: bool = True,
) -> list[Fold]:
    """For each partition: pick the best of ``configs`` on the others, score it on that one.

    Shows whether a sweep's choice carries over to a conversation it never saw; ``default``
    and plain cosine are scored on the held-out partition alongside. With ``calibrate``, a
    config that packs by expected relevance has its ``relevance_model`` fitted on the other
    partitions too (``fit_relevance``), so the held-out one is never seen.
    """
    ref = default.model_dump()
    folds = []
    for name in evaluation.partition_names:
        rest = evaluation.subset(n for n in evaluation.partition_names if n != name)
        fitted = [fit_relevance(rest, c) if calibrate and c.packing == "expected" else c
                  for c in configs]
        best = max(fitted, key=lambda c: objective(rest.summary(c)))
        held = evaluation.subset([name])
        outcomes = held.outcomes(best)
        folds.append(Fold(
            held_out=name,
            chosen={k: v for k, v in best.model_dump().items() if ref.get(k) != v},
            tuned=summarise(outcomes, evaluation.budgets),
            outcomes=outcomes,
            default=held.summary(default),
            cosine=held.summary(RankingConfig.plain_cosine()),
        ))
    return folds


def pooled(folds: Sequence[Fold], budgets: Iterable[int]) -> Summary:
    """The held-out outcomes of every fold, summarised together (each query counts once)."""
    return summarise([o for fold in folds for o in fold.outcomes], budgets)


def fit_relevance(
    evaluation: Evaluation, config: RankingConfig, top: int = 60, l2: float = 1e-3
) -> RankingConfig:
    """``config`` with ``relevance_model`` fitted on ``evaluation``'s labelled queries.

    A logistic regression (Newton's method, a little L2) of "this candidate is relevant" on
    ``relevance_features`` of the first ``top`` distinct candidates of every labelled query,
    ranked by ``config``: what expected packing needs to weigh a line against its bytes.
    """
    ranker = Ranker(config)
    rows, labels = [], []
    for part in evaluation.parts:
        snap = part.snapshot()
        for pq in part.queries:
            if not pq.relevant:
                continue
            ranked = [s for s in ranker.rank(snap, pq.vector, pq.query.text) if s.item.surfaced]
            head = list(ranker.without_near_duplicates(snap, ranked))[:top]
            if head:
                rows.append(relevance_features(head))
                labels.append(np.array([s.item.n in pq.relevant for s in head], np.float64))
    if not rows:
        return config
    x, y = np.vstack(rows), np.concatenate(labels)
    w = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -50, 50)))
        hessian = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, x.T @ (p - y) + l2 * w)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    coefficients = tuple(round(float(v), 4) for v in w)
    return config.model_copy(update={"relevance_model": coefficients})
