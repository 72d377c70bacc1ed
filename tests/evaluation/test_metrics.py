"""Evaluation figures: ranks, budgets, gold recall, off-topic probes."""

from __future__ import annotations

import numpy as np
import pytest

from semmem.evaluation.harness import Outcome
from semmem.evaluation.metrics import budget_metrics, misses, ndcg, reciprocal_rank, summarise


def outcome(relevant: set[int], ranked: list[int], packed: list[int]) -> Outcome:
    from semmem.evaluation.dataset import Query

    return Outcome("p", Query("q", "q", frozenset()), frozenset(relevant), tuple(ranked),
                   tuple(0.0 for _ in ranked), {100: tuple(packed)},
                   {n: 10 for n in range(1, 10)})


def test_reciprocal_rank_and_ndcg_values() -> None:
    assert reciprocal_rank([4, 2, 7], frozenset({7})) == pytest.approx(1 / 3)
    assert reciprocal_rank([4, 2], frozenset({7})) == 0.0
    assert ndcg([1, 2], frozenset({1, 2})) == pytest.approx(1.0)
    assert ndcg([3, 1], frozenset({1})) == pytest.approx(1 / np.log2(3))
    assert ndcg([3, 4, 1], frozenset({1, 2}), k=2) == 0.0


def test_budget_metrics_gold_recall_hits_and_noise_bytes() -> None:
    results = [
        outcome({1, 2}, [1, 5, 2], [1, 5]),  # half found, first line relevant, one noise line
        outcome({3}, [4, 3], [4]),           # nothing found
    ]
    m = budget_metrics(results, 100)
    assert m.gold_recall == pytest.approx(0.25)
    assert m.gold_recall_micro == pytest.approx(1 / 3)
    assert m.hit_rate == pytest.approx(0.5)
    assert m.mrr == pytest.approx(0.5)
    assert m.noise_bytes == pytest.approx(11.0)  # two noise lines of 10 bytes + newline each
    assert m.used_bytes == pytest.approx((21 + 10) / 2)
    assert [o.relevant for o in misses(results, 100)] == [frozenset({1, 2}), frozenset({3})]


def test_summarise_keeps_off_topic_probes_apart() -> None:
    results = [outcome({1}, [1], [1]), outcome(set(), [2, 3], [2, 3])]
    s = summarise(results, [100])
    assert s.queries == 1 and s.probes == 1
    assert s.gold_recall(100) == 1.0
    assert s.offtopic_bytes[100] == 21.0 and s.offtopic_any[100] == 1.0
    assert s.recall_at[5] == 1.0


def test_budget_metrics_relevant_bytes_facts_and_expected() -> None:
    first = outcome({1, 2}, [1, 5, 2], [1, 5, 2])
    first = Outcome(first.partition, first.query, first.relevant, first.ranked, first.scores,
                    first.packed, first.sizes, {100: 1.5})
    m = budget_metrics([first, outcome({3}, [4, 3], [4])], 100)
    assert m.relevant_bytes == pytest.approx(11.0)  # two relevant lines of 10 bytes + newline
    assert m.relevant_facts == pytest.approx(1.0)
    assert m.expected_facts == pytest.approx(0.75)
