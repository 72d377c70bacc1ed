"""Metrics of ranked and packed recalls against relevance labels.

Per budget (what the model actually receives):

- gold recall: share of a query's relevant items whose line is in the rendered recall (mean
  over queries; ``gold_recall_micro`` pools all relevant items instead);
- hit rate: share of queries with at least one relevant line rendered;
- MRR and nDCG of the rendered lines (a relevant item not rendered counts as missing);
- noise bytes: bytes of rendered lines that are not relevant (each line plus its newline);
- relevant bytes and relevant facts: bytes of the rendered lines that are relevant (each line
  plus its newline), and how many relevant facts were rendered;
- expected relevant facts: what the ranker's calibrated relevance predicted for those lines;
- used bytes: size of the rendered text.

Of the ranked list (everything packing looks at, after the floor and deduplication):
recall@k, MRR and nDCG@10.

Off-topic probes (queries with nothing relevant) are kept apart: for them the only measure is
how many bytes recall spends anyway (``offtopic_bytes``) and how often it returns anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from semmem.evaluation.harness import BUDGETS, Outcome

KS = (5, 10, 20)


@dataclass(frozen=True)
class BudgetMetrics:
    """Means over queries at one budget."""

    gold_recall: float
    gold_recall_micro: float
    hit_rate: float
    mrr: float
    ndcg: float
    noise_bytes: float
    used_bytes: float
    lines: float
    relevant_bytes: float = 0.0
    relevant_facts: float = 0.0
    expected_facts: float = 0.0


@dataclass(frozen=True)
class Summary:
    """All metrics of one ranker on one set of queries."""

    queries: int
    budgets: dict[int, BudgetMetrics]
    recall_at: dict[int, float]
    mrr: float
    ndcg10: float
    ranked_len: float
    by_category: dict[str, dict[int, float]] = field(default_factory=dict)
    probes: int = 0
    offtopic_bytes: dict[int, float] = field(default_factory=dict)
    offtopic_any: dict[int, float] = field(default_factory=dict)

    def gold_recall(self, budget: int) -> float:
        """Gold recall within ``budget`` (a share, 0–1)."""
        return self.budgets[budget].gold_recall

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "queries": self.queries,
            "budgets": {str(b): vars(m) for b, m in self.budgets.items()},
            "ranked": {
                **{f"recall@{k}": v for k, v in self.recall_at.items()},
                "mrr": self.mrr, "ndcg@10": self.ndcg10, "length": self.ranked_len,
            },
            "gold_recall_by_category": {
                c: {str(b): v for b, v in per.items()} for c, per in self.by_category.items()
            },
            "offtopic": {
                "probes": self.probes,
                "bytes": {str(b): v for b, v in self.offtopic_bytes.items()},
                "any": {str(b): v for b, v in self.offtopic_any.items()},
            },
        }


def reciprocal_rank(order: Sequence[int], relevant: frozenset[int]) -> float:
    """1 / rank of the first relevant item in ``order`` (0 when there is none)."""
    for i, n in enumerate(order, 1):
        if n in relevant:
            return 1.0 / i
    return 0.0


def ndcg(order: Sequence[int], relevant: frozenset[int], k: int | None = None) -> float:
    """Binary-relevance nDCG of ``order`` (cut at ``k``) against the ideal ordering."""
    cut = order if k is None else order[:k]
    dcg = sum(1.0 / math.log2(i + 1) for i, n in enumerate(cut, 1) if n in relevant)
    ideal_len = len(relevant) if k is None else min(len(relevant), k)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, ideal_len + 1))
    return dcg / ideal if ideal else 0.0


def budget_metrics(outcomes: Sequence[Outcome], budget: int) -> BudgetMetrics:
    """Means over ``outcomes`` at ``budget``."""
    if not outcomes:
        return BudgetMetrics(0, 0, 0, 0, 0, 0, 0, 0)
    recall = hit = mrr = gain = noise = used = lines = useful = expected = 0.0
    found = total = 0
    for o in outcomes:
        shown = o.packed[budget]
        got = sum(1 for n in shown if n in o.relevant)
        recall += got / len(o.relevant)
        found += got
        total += len(o.relevant)
        hit += 1.0 if got else 0.0
        mrr += reciprocal_rank(shown, o.relevant)
        gain += ndcg(shown, o.relevant)
        noise += sum(o.sizes[n] + 1 for n in shown if n not in o.relevant)
        useful += sum(o.sizes[n] + 1 for n in shown if n in o.relevant)
        expected += o.expected.get(budget, 0.0)
        used += sum(o.sizes[n] for n in shown) + max(len(shown) - 1, 0)
        lines += len(shown)
    q = len(outcomes)
    return BudgetMetrics(recall / q, found / total, hit / q, mrr / q, gain / q, noise / q,
                         used / q, lines / q, useful / q, found / q, expected / q)


def summarise(everything: Sequence[Outcome], budgets: Iterable[int] = BUDGETS) -> Summary:
    """Every metric of one ranker's outcomes (labelled queries and off-topic probes)."""
    budgets = tuple(budgets)
    outcomes = [o for o in everything if o.relevant]
    probes = [o for o in everything if not o.relevant]
    q = max(len(outcomes), 1)
    p = max(len(probes), 1)
    recall_at = {
        k: sum(len(set(o.ranked[:k]) & o.relevant) / len(o.relevant) for o in outcomes) / q
        for k in KS
    }
    cats: dict[str, list[Outcome]] = {}
    for o in outcomes:
        cats.setdefault(o.query.category or "-", []).append(o)
    by_category = {
        c: {b: budget_metrics(group, b).gold_recall for b in budgets}
        for c, group in sorted(cats.items())
    }
    return Summary(
        queries=len(outcomes),
        budgets={b: budget_metrics(outcomes, b) for b in budgets},
        recall_at=recall_at,
        mrr=sum(reciprocal_rank(o.ranked, o.relevant) for o in outcomes) / q,
        ndcg10=sum(ndcg(o.ranked, o.relevant, 10) for o in outcomes) / q,
        ranked_len=sum(len(o.ranked) for o in outcomes) / q,
        by_category=by_category,
        probes=len(probes),
        offtopic_bytes={
            b: sum(sum(o.sizes[n] for n in o.packed[b]) + max(len(o.packed[b]) - 1, 0)
                   for o in probes) / p
            for b in budgets
        },
        offtopic_any={b: sum(1 for o in probes if o.packed[b]) / p for b in budgets},
    )


def misses(outcomes: Sequence[Outcome], budget: int) -> list[Outcome]:
    """Labelled outcomes that left a relevant item out of the recall at ``budget``."""
    return [o for o in outcomes if o.relevant and not o.relevant <= set(o.packed[budget])]
