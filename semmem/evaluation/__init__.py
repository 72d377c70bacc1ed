"""Evaluation of recall ranking on labelled sets (``semmem eval``, the tuning notebooks).

- ``dataset``: the JSONL labelled-set format and the LoCoMo loader;
- ``embeddings``: the model behind an on-disk vector cache, so sweeps embed each text once;
- ``harness``: ranking and packing every query, in memory or through ``Memory.recall``;
- ``metrics``: gold recall within budget, hit rate, MRR, nDCG, recall@k, noise bytes;
- ``runner``: ``Evaluation`` (one set, many configs) and the three-way comparison;
- ``tuning``: sweeps and leave-one-partition-out checks;
- ``report``: the printed table and its JSON form.
"""

from __future__ import annotations

from pathlib import Path

from semmem.evaluation.dataset import Fact, LabelledSet, Partition, Query, load_dataset
from semmem.evaluation.harness import BUDGETS, Outcome
from semmem.evaluation.metrics import Summary, summarise
from semmem.evaluation.runner import COSINE, NUMBER_ORDER, RANKED, Evaluation, Report
from semmem.ranking.ranker import RankingConfig

__all__ = [
    "BUDGETS",
    "COSINE",
    "NUMBER_ORDER",
    "RANKED",
    "Evaluation",
    "Fact",
    "LabelledSet",
    "Outcome",
    "Partition",
    "Query",
    "Report",
    "Summary",
    "load_dataset",
    "run_cli",
    "summarise",
]


def run_cli(dataset: Path, *, ranking: Path | None, model: Path | None, as_json: bool,
            encoder: str = "auto") -> str:
    """``semmem eval``: the ranking (file, else ``SEMMEM_RANKING_*``/defaults) vs references.

    Recalls through ``Memory.recall`` on a temporary LanceDB store, checks the in-memory path
    agrees, and returns the table (or JSON).
    """
    from semmem.evaluation.report import render_json, render_text

    config = RankingConfig.from_file(ranking) if ranking is not None else RankingConfig()
    report = Evaluation.load(dataset, model, encoder=encoder).compare(config, through_store=True)
    return render_json(report) if as_json else render_text(report)
