"""Tuning: the relevance model fitted on labelled outcomes."""

from __future__ import annotations

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.evaluation import Evaluation, load_dataset
from semmem.evaluation.metrics import summarise
from semmem.evaluation.tuning import fit_relevance
from semmem.ranking.ranker import Ranker, RankingConfig
from tests.support.datasets import SMALL_SET


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
