"""The evaluation harness end to end: both recall paths, tuning, the real model, ``semmem eval``.

Loaders, metrics and the embedding cache alone are in ``test_dataset.py``, ``test_metrics.py``
and ``test_embeddings.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.fakes import HashingEmbedder
from semmem.evaluation import COSINE, NUMBER_ORDER, RANKED, Evaluation, load_dataset
from semmem.evaluation.tuning import grid, leave_one_out, objective, pooled, sweep
from semmem.ranking.ranker import RankingConfig
from tests.support.datasets import SMALL_SET, write_jsonl


async def test_compare_store_path_matches_memory_path() -> None:
    ev = Evaluation(load_dataset(SMALL_SET), HashingEmbedder())
    report = ev.compare(RankingConfig(), through_store=True)
    assert report.identical is True
    assert list(report.summaries) == [RANKED, COSINE, NUMBER_ORDER]
    assert report.summaries[RANKED].queries == 42
    assert report.summaries[RANKED].probes == 3 * 30 + 1
    # Number order ranks a query's whole partition.
    labelled = [(len(p.items), sum(1 for q in p.queries if q.relevant)) for p in ev.parts]
    whole = sum(n * q for n, q in labelled) / sum(q for _, q in labelled)
    assert report.summaries[NUMBER_ORDER].ranked_len == pytest.approx(whole)


def test_sweep_and_leave_one_out_pick_from_the_grid() -> None:
    ev = Evaluation(load_dataset(SMALL_SET), HashingEmbedder(), budgets=[256, 512])
    configs = grid(RankingConfig(), {"lexical_weight": [0.0, 0.4], "min_score": [-1.0, 0.1]})
    assert len(configs) == 4
    rows = sweep(ev, configs)
    assert [r.score for r in rows] == sorted((r.score for r in rows), reverse=True)
    assert rows[0].score == objective(ev.summary(rows[0].config))
    folds = leave_one_out(ev, configs, RankingConfig())
    assert [f.held_out for f in folds] == ["maya", "repo", "ines"]
    assert pooled(folds, [256, 512]).queries == 42


@pytest.mark.model
def test_defaults_beat_plain_cosine_on_the_small_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMMEM_EVAL_CACHE", str(tmp_path))
    report = Evaluation.load(SMALL_SET).compare(RankingConfig())
    ranked, cosine = report.summaries[RANKED], report.summaries[COSINE]
    assert ranked.mrr > cosine.mrr
    assert ranked.gold_recall(512) >= cosine.gold_recall(512)
    # The floor keeps most off-topic noise out; plain cosine fills the budget with it.
    assert ranked.offtopic_bytes[1024] < 0.5 * cosine.offtopic_bytes[1024]


@pytest.mark.model
def test_eval_cli_prints_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMMEM_EVAL_CACHE", str(tmp_path))
    ranking = tmp_path / "ranking.json"
    RankingConfig(lexical_weight=0.2).to_file(ranking)
    result = CliRunner().invoke(app, ["eval", "--dataset", str(SMALL_SET),
                                      "--ranking", str(ranking)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "gold recall within budget (%)" in out
    assert "(in-memory path identical)" in out
    assert '"lexical_weight":0.2' in out
    for name in (RANKED, COSINE, NUMBER_ORDER):
        assert f"  {name} " in out
    result = CliRunner().invoke(app, ["eval", "--dataset", str(SMALL_SET), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert set(body["rankers"]) == {RANKED, COSINE, NUMBER_ORDER}
    assert body["identical"] is True
    assert 0 < body["rankers"][COSINE]["budgets"]["1024"]["gold_recall"] <= 1


def test_eval_cli_bad_dataset_is_one_error_line(tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"type": "fact", "partition": "p"}])
    result = CliRunner().invoke(app, ["eval", "--dataset", str(bad)])
    assert result.exit_code == 1
    assert "bad.jsonl:1: 'id' must be a non-empty string" in result.output


def test_the_table_shows_a_query_offset_by_its_length_and_the_json_whole() -> None:
    from semmem.evaluation.report import render_json, render_text

    embedder = HashingEmbedder()
    offset = tuple([0.0] * (embedder.dim - 1) + [0.25])
    report = Evaluation(load_dataset(SMALL_SET), embedder).compare(
        RankingConfig(query_offset=offset))
    ranking = next(line for line in render_text(report).splitlines()
                   if line.startswith("ranking: "))
    assert '"query_offset":"|δ| 0.250"' in ranking and len(ranking) < 2000
    assert json.loads(render_json(report))["ranking"]["query_offset"] == list(offset)
