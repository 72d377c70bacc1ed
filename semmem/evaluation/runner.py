"""The evaluation API the CLI and the notebooks use: one labelled set, many rankers.

    ev = Evaluation.load(Path("tests/data/labelled.jsonl"))
    report = ev.compare(RankingConfig())          # tuned vs plain cosine vs number order
    print(render_text(report))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from semmem.embedding.embedder import Embedder
from semmem.evaluation.dataset import LabelledSet, load_dataset
from semmem.evaluation.embeddings import model_embedder
from semmem.evaluation.harness import (
    BUDGETS,
    Outcome,
    PreparedPartition,
    prepare,
    run_memory,
    run_number_order,
    run_ranker,
    same_outcomes,
)
from semmem.evaluation.metrics import Summary, summarise
from semmem.evaluation.probes import OFF_TOPIC
from semmem.ranking.ranker import Ranker, RankingConfig

RANKED = "semmem"
COSINE = "plain cosine"
NUMBER_ORDER = "number order"


@dataclass
class Report:
    """One comparison: a summary (and the outcomes) per ranker, on one labelled set."""

    dataset: str
    model: str
    config: RankingConfig
    partitions: int
    facts: int
    items: int
    skipped: int
    budgets: tuple[int, ...]
    summaries: dict[str, Summary]
    outcomes: dict[str, list[Outcome]] = field(repr=False)
    through_store: bool = False
    identical: bool | None = None  # store path and in-memory path agreed (when both ran)
    nothing: int = 0  # the set's own questions labelled to recall nothing (among the probes)


class Evaluation:
    """A labelled set, embedded once, ready to score any number of ranking configs."""

    def __init__(
        self, labelled: LabelledSet, embedder: Embedder, *, budgets: Iterable[int] = BUDGETS,
        probes: Sequence[str] = OFF_TOPIC, parts: list[PreparedPartition] | None = None,
    ) -> None:
        self.labelled = labelled
        self.embedder = embedder
        self.budgets = tuple(budgets)
        self.probes = tuple(probes)
        self.parts = parts if parts is not None else prepare(labelled, embedder, self.probes)

    @classmethod
    def load(
        cls, dataset: Path, model: Path | None = None, *, cache_dir: Path | None = None,
        budgets: Iterable[int] = BUDGETS, probes: Sequence[str] = OFF_TOPIC,
        encoder: str = "auto",
    ) -> Evaluation:
        """Load a labelled set (JSONL or LoCoMo) and embed it with a model folder (cached)."""
        from semmem.embedding.files import default_model_dir

        labelled = load_dataset(dataset)  # first: a bad file should fail before the model loads
        embedder = model_embedder(model or default_model_dir(), cache_dir, encoder)
        return cls(labelled, embedder, budgets=budgets, probes=probes)

    @property
    def partition_names(self) -> list[str]:
        """Names of the partitions, in order."""
        return [p.name for p in self.parts]

    def subset(self, names: Iterable[str]) -> Evaluation:
        """The same evaluation restricted to some partitions (no re-embedding)."""
        wanted = set(names)
        return Evaluation(
            self.labelled.subset(wanted), self.embedder, budgets=self.budgets,
            probes=self.probes, parts=[p for p in self.parts if p.name in wanted],
        )

    def outcomes(self, config: RankingConfig) -> list[Outcome]:
        """Rank and pack every query in memory with ``config``."""
        return run_ranker(self.parts, Ranker(config), self.budgets)

    def summary(self, config: RankingConfig) -> Summary:
        """Metrics of ``config`` (in memory)."""
        return summarise(self.outcomes(config), self.budgets)

    def compare(self, config: RankingConfig, *, through_store: bool = False) -> Report:
        """``config`` against plain cosine and number order, in one run.

        With ``through_store`` the two rankers recall through ``Memory.recall`` on a temporary
        LanceDB store, and the in-memory path is run too and checked to agree.
        """
        rankers = {RANKED: Ranker(config), COSINE: Ranker(RankingConfig.plain_cosine())}
        memory_side = {name: run_ranker(self.parts, r, self.budgets) for name, r in rankers.items()}
        identical = None
        outcomes = memory_side
        if through_store:
            outcomes = run_memory(self.parts, self.embedder, rankers, self.budgets)
            identical = all(same_outcomes(outcomes[n], memory_side[n]) for n in rankers)
        outcomes = {**outcomes, NUMBER_ORDER: run_number_order(self.parts, self.budgets)}
        return Report(
            dataset=self.labelled.name, model=self.embedder.model_id, config=config,
            partitions=len(self.parts), facts=self.labelled.fact_count,
            items=sum(len(p.items) for p in self.parts),
            skipped=sum(p.skipped for p in self.labelled.partitions), budgets=self.budgets,
            summaries={n: summarise(o, self.budgets) for n, o in outcomes.items()},
            outcomes=outcomes, through_store=through_store, identical=identical,
            nothing=sum(1 for p in self.labelled.partitions for q in p.queries
                        if not q.relevant),
        )
