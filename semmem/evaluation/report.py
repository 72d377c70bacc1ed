"""Rendering a comparison: the table ``semmem eval`` prints, and its JSON form."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from semmem.evaluation.metrics import KS, BudgetMetrics
from semmem.evaluation.runner import Report
from semmem.ranking.calibration import offset_length
from semmem.ranking.config import RankingConfig

_PER_BUDGET: list[tuple[str, Callable[[BudgetMetrics], float], str]] = [
    ("gold recall within budget (%)", lambda m: 100 * m.gold_recall, "{:7.1f}"),
    ("hit rate (%)", lambda m: 100 * m.hit_rate, "{:7.1f}"),
    ("MRR of the rendered lines", lambda m: m.mrr, "{:7.3f}"),
    ("nDCG of the rendered lines", lambda m: m.ndcg, "{:7.3f}"),
    ("bytes on relevant facts (mean)", lambda m: m.relevant_bytes, "{:7.0f}"),
    ("relevant facts returned (mean)", lambda m: m.relevant_facts, "{:7.2f}"),
    ("bytes on non-relevant facts (mean)", lambda m: m.noise_bytes, "{:7.0f}"),
    ("bytes rendered (mean)", lambda m: m.used_bytes, "{:7.0f}"),
]


def _knobs(config: RankingConfig) -> dict[str, Any]:
    """The knobs for one line: a model's query offset (384 numbers) by its length."""
    knobs = config.model_dump()
    if config.query_offset is not None:
        knobs["query_offset"] = offset_length(config.query_offset)
    return knobs


def plural(count: int, noun: str) -> str:
    """``1 labelled question``, ``2 labelled questions``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def render_text(report: Report) -> str:
    """The comparison as aligned plain-text tables, one block per metric."""
    names = list(report.summaries)
    width = max(len(n) for n in names) + 4
    first = report.summaries[names[0]]
    lines = [
        f"dataset {report.dataset}: {report.partitions} partitions, {report.facts} facts "
        f"({report.items} items), "
        + plural(first.queries + report.nothing, "labelled question")
        + f" ({first.queries} with facts to recall, {report.nothing} to recall nothing)"
        + (f" ({report.skipped} without labelled facts skipped)" if report.skipped else "")
        + f", {plural(first.probes - report.nothing, 'off-topic probe')} of semmem's own",
        f"model {report.model}; path: "
        + ("Memory.recall on a temporary LanceDB store" if report.through_store else "in memory")
        + ("" if report.identical is None else
           f" (in-memory path {'identical' if report.identical else 'DIFFERS'})"),
        f"ranking: {json.dumps(_knobs(report.config), separators=(',', ':'), ensure_ascii=False)}",
    ]
    head = " " * width + "".join(f"{b:>7}" for b in report.budgets)
    for title, get, fmt in _PER_BUDGET:
        lines += ["", title, head]
        for name in names:
            s = report.summaries[name]
            lines.append(f"  {name:<{width - 2}}" + "".join(
                fmt.format(get(s.budgets[b])) for b in report.budgets))
    lines += ["", "off-topic probes: bytes recalled (mean)", head]
    for name in names:
        s = report.summaries[name]
        lines.append(f"  {name:<{width - 2}}" + "".join(
            f"{s.offtopic_bytes.get(b, 0.0):7.0f}" for b in report.budgets))
    lines += ["", "off-topic probes: share that recall anything (%)", head]
    for name in names:
        s = report.summaries[name]
        lines.append(f"  {name:<{width - 2}}" + "".join(
            f"{100 * s.offtopic_any.get(b, 0.0):7.1f}" for b in report.budgets))
    cols = [f"R@{k}" for k in KS] + ["MRR", "nDCG@10", "length"]
    lines += ["", "ranked list (what packing looks at)",
              " " * width + "".join(f"{c:>8}" for c in cols)]
    for name in names:
        s = report.summaries[name]
        vals = [100 * s.recall_at[k] for k in KS]
        lines.append(f"  {name:<{width - 2}}" + "".join(f"{v:8.1f}" for v in vals)
                     + f"{s.mrr:8.3f}{s.ndcg10:8.3f}{s.ranked_len:8.0f}")
    cats = sorted({c for s in report.summaries.values() for c in s.by_category})
    if len(cats) > 1:
        at = 1024 if 1024 in report.budgets else report.budgets[0]
        lines += ["", f"gold recall within {at} bytes by query category (%)",
                  " " * width + "".join(f"{c:>8}" for c in cats)]
        for name in names:
            per = report.summaries[name].by_category
            lines.append(f"  {name:<{width - 2}}" + "".join(
                f"{100 * per.get(c, {}).get(at, 0.0):8.1f}" for c in cats))
    return "\n".join(lines)


def render_json(report: Report) -> str:
    """The comparison as JSON (every metric of every ranker)."""
    body: dict[str, Any] = {
        "dataset": report.dataset,
        "model": report.model,
        "partitions": report.partitions,
        "facts": report.facts,
        "items": report.items,
        "skipped": report.skipped,
        "budgets": list(report.budgets),
        "through_store": report.through_store,
        "identical": report.identical,
        "ranking": report.config.model_dump(),
        "rankers": {name: s.as_dict() for name, s in report.summaries.items()},
    }
    return json.dumps(body, indent=2)
