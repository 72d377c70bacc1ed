"""Sweeping ranking knobs and checking the choice by leave-one-partition-out.

The objective is the mean gold recall over the budgets that matter most (512, 1024 and 2048
bytes by default): one number, so a sweep can pick a setting, while the per-budget figures
stay visible in its rows. A setting must beat the defaults to be written (``settle``: on a tie
the defaults are kept, and ties within a sweep go to the setting that changes least), and the
relevance model is refitted only on ``MIN_FIT_QUERIES`` labelled questions or more.
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
# Questions with facts to recall that a refit of the relevance model (six coefficients) needs;
# on fewer the fitted weights follow a handful of candidates, so the defaults are kept.
MIN_FIT_QUERIES = 20


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
    return sorted(rows, key=lambda r: (-r.score, len(r.changed)))  # a tie: the fewest changes


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
        best = min(fitted, key=lambda c: (-objective(rest.summary(c)), _changes(c, ref)))
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


def _changes(config: RankingConfig, ref: dict[str, Any]) -> int:
    return sum(1 for k, v in config.model_dump().items() if ref.get(k) != v)


def questions(evaluation: Evaluation) -> tuple[int, int]:
    """The set's own labelled questions: (with facts to recall, that should recall nothing)."""
    asked = [q for p in evaluation.labelled.partitions for q in p.queries]
    with_facts = sum(1 for q in asked if q.relevant)
    return with_facts, len(asked) - with_facts


def counted(evaluation: Evaluation) -> str:
    """``2 labelled questions (1 with facts to recall, 1 that should recall nothing)``."""
    with_facts, nothing = questions(evaluation)
    total = with_facts + nothing
    return (f"{total} labelled question{'' if total == 1 else 's'} ({with_facts} with facts "
            f"to recall, {nothing} that should recall nothing)")


def can_fit(evaluation: Evaluation) -> bool:
    """Whether ``fit_relevance`` refits on this set (``MIN_FIT_QUERIES``)."""
    return questions(evaluation)[0] >= MIN_FIT_QUERIES


def fit_note(evaluation: Evaluation) -> str:
    """What ``fit_relevance`` does with this set, in one line."""
    with_facts = questions(evaluation)[0]
    if can_fit(evaluation):
        return f"relevance model refitted on {with_facts} questions with facts to recall"
    return (f"relevance model not refitted: the fit needs at least {MIN_FIT_QUERIES} questions "
            f"with facts to recall, this set has {with_facts}; the default model is kept")


@dataclass(frozen=True)
class Settled:
    """What is written: the chosen setting, or the defaults when it does not beat them."""

    config: RankingConfig
    score: float
    default_score: float
    message: str


def settle(evaluation: Evaluation, chosen: RankingConfig, defaults: RankingConfig) -> Settled:
    """``chosen`` if it scores above ``defaults`` on ``evaluation``, else ``defaults`` itself:
    a tie writes nothing that differs from the defaults, and says so."""
    score = objective(evaluation.summary(chosen))
    base = objective(evaluation.summary(defaults))
    ref = defaults.model_dump()
    changed = {k: v for k, v in chosen.model_dump().items() if ref.get(k) != v}
    if score <= base or not changed:
        return Settled(defaults, base, base, (
            f"nothing beat the defaults (objective {100 * score:.2f}, defaults "
            f"{100 * base:.2f}): the defaults are written, unchanged"))
    shown = ", ".join(f"{k}={v}" for k, v in changed.items() if k != "relevance_model")
    if "relevance_model" in changed:
        shown += (", " if shown else "") + "relevance_model refitted"
    return Settled(chosen, score, base, (
        f"objective {100 * score:.2f} (defaults {100 * base:.2f}); changed from the "
        f"defaults: {shown}"))


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
    On fewer than ``MIN_FIT_QUERIES`` questions with facts to recall, ``config`` unchanged.
    """
    if not can_fit(evaluation):
        return config
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
