"""Tuning: the relevance model fitted on labelled outcomes, and what a run writes (issue 62,
item 2: a tie keeps the defaults, no refit on too few questions, questions counted right)."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.evaluation import Evaluation, load_dataset
from semmem.evaluation.metrics import summarise
from semmem.evaluation.probes import OFF_TOPIC
from semmem.evaluation.report import render_text
from semmem.evaluation.tuning import (
    MIN_FIT_QUERIES,
    counted,
    fit_note,
    fit_relevance,
    grid,
    objective,
    settle,
    sweep,
)
from semmem.ranking.ranker import Ranker, RankingConfig
from tests.support.datasets import SMALL_SET, write_jsonl


def test_fit_relevance_learns_that_better_scores_are_likelier_relevant() -> None:
    ev = Evaluation(load_dataset(SMALL_SET), HashingEmbedder(), budgets=[256, 512])
    fitted = fit_relevance(ev, RankingConfig(packing="expected"))
    assert fitted.relevance_model != RankingConfig().relevance_model
    ranker = Ranker(fitted)
    outcomes = ev.outcomes(fitted)
    labelled = [o for o in outcomes if o.relevant]
    # Calibrated: the expected relevant facts in the packed lines are close to those found.
    expected = sum(o.expected[512] for o in labelled) / len(labelled)
    found = summarise(labelled, [512]).budgets[512].relevant_facts
    assert expected == pytest.approx(found, rel=0.35)
    assert ranker.config.packing == "expected"


def _readme_set(path: Path) -> Evaluation:
    """The README's tuning example: carol's two facts, one question naming the fact it should
    recall and one that should recall nothing."""
    write_jsonl(path, [
        {"type": "fact", "id": "1", "text": "Prefers SI units"},
        {"type": "fact", "id": "3", "text": "Flies from Lyon"},
        {"type": "query", "text": "which units do I use?", "relevant": ["1"]},
        {"type": "query", "text": "what is the capital of Peru?", "relevant": []},
    ])
    return Evaluation(load_dataset(path), HashingEmbedder(), budgets=[512, 1024, 2048])


def test_a_tie_with_the_defaults_keeps_the_defaults_and_says_so(tmp_path: Path) -> None:
    """The README's example reported "objective 100.00 (defaults 100.00)" and still wrote
    lexical_weight 0.0, centering 0.0, stemming false, time_weight 0.0: the first row of a
    sweep where every row tied. Ties go to the fewest changes; a tie writes the defaults."""
    ev = _readme_set(tmp_path / "tuning.jsonl")
    defaults = RankingConfig()
    rows = sweep(ev, grid(defaults, {"lexical_weight": [0.0, 0.4], "centering": [0.0, 1.0],
                                     "stemming": [False, True], "time_weight": [0.0, 0.2]}),
                 defaults)
    assert len({row.score for row in rows}) == 1  # every setting ties here
    assert rows[0].changed == {}
    other = defaults.model_copy(update={"lexical_weight": 0.0, "stemming": False})
    settled = settle(ev, other, defaults)
    assert settled.config == defaults
    assert settled.message == ("nothing beat the defaults (objective 100.00, defaults 100.00): "
                               "the defaults are written, unchanged")
    assert objective(ev.summary(other)) == objective(ev.summary(defaults))


def test_the_relevance_model_is_not_refitted_on_too_few_questions(tmp_path: Path) -> None:
    ev = _readme_set(tmp_path / "tuning.jsonl")
    config = RankingConfig(packing="expected")
    assert fit_relevance(ev, config) == config
    assert fit_note(ev) == (
        f"relevance model not refitted: the fit needs at least {MIN_FIT_QUERIES} questions "
        "with facts to recall, this set has 1; the default model is kept")
    big = Evaluation(load_dataset(SMALL_SET), HashingEmbedder(), budgets=[512])
    assert fit_note(big) == "relevance model refitted on 42 questions with facts to recall"


def test_labelled_questions_are_counted_as_the_file_has_them(tmp_path: Path) -> None:
    """Two labelled questions were reported as "1 labelled queries" (the one that should
    recall nothing was counted among semmem's own off-topic probes)."""
    ev = _readme_set(tmp_path / "tuning.jsonl")
    assert counted(ev) == ("2 labelled questions (1 with facts to recall, 1 that should "
                           "recall nothing)")
    head = render_text(ev.compare(RankingConfig())).splitlines()[0]
    assert "2 labelled questions (1 with facts to recall, 1 to recall nothing)" in head, head
    assert f"{len(OFF_TOPIC)} off-topic probes of semmem's own" in head, head
