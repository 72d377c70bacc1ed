"""The notebooks run top to bottom on the small labelled set, with the real model, through the
command the docs give (``jupyter nbconvert --execute --to notebook --output-dir …``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from semmem.ranking.ranker import RankingConfig

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

pytestmark = [pytest.mark.model, pytest.mark.slow]


def execute(name: str, out: Path) -> nbformat.NotebookNode:
    """Run a notebook as docs/ranking.md says (``.venv/bin/jupyter nbconvert`` is this
    module), the executed copy written to ``out``."""
    subprocess.run([sys.executable, "-m", "nbconvert", "--execute", "--to", "notebook",
                    "--output-dir", str(out), "--ExecutePreprocessor.timeout=180",
                    str(NOTEBOOKS / name)], check=True, capture_output=True)
    [executed] = out.glob(name.removesuffix(".ipynb") + "*.ipynb")
    return nbformat.read(executed, as_version=4)


def outputs(book: nbformat.NotebookNode) -> str:
    text = []
    for cell in book.cells:
        for out in cell.get("outputs", []):
            text.append(out.get("text", "") or "".join(out.get("data", {}).get("text/plain", "")))
    return "\n".join(text)


def images(book: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {})
               for cell in book.cells for out in cell.get("outputs", []))


def test_tune_ranking_notebook_writes_a_loadable_ranking_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "chosen.json"
    monkeypatch.setenv("SEMMEM_TUNE_OUTPUT", str(output))
    monkeypatch.setenv("SEMMEM_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SEMMEM_TUNE_DATASET", raising=False)
    book = execute("tune_ranking.ipynb", tmp_path)
    text = outputs(book)
    assert "gold recall within budget (%)" in text
    assert "labelled queries miss a fact" in text
    assert "pooled: tuned" in text
    assert images(book) >= 2
    assert (tmp_path / "chosen.recall.png").stat().st_size > 0
    assert "relevance_model (intercept" in text
    assert (tmp_path / "chosen.packing.png").stat().st_size > 0  # the budget curve
    assert images(book) >= 3
    chosen = RankingConfig.from_file(output)
    assert chosen.min_score == RankingConfig().min_score  # the sweep leaves the floor alone
    # Every knob is written, the relevance model fitted on the set (not the LoCoMo default).
    assert set(json.loads(output.read_text())) == set(RankingConfig.model_fields)
    assert chosen.relevance_model != RankingConfig().relevance_model


def test_explore_memory_notebook_shows_recall_with_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEMMEM_DATA", raising=False)
    monkeypatch.delenv("SEMMEM_RANKING", raising=False)
    monkeypatch.setenv("SEMMEM_EXPLORE_QUERY", "The cat seems lethargic, what should I do?")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    book = execute("explore_memory.ipynb", tmp_path)
    text = outputs(book)
    assert "seeded 35 facts" in text
    assert "Maya has a cat named Pixel" in text
    assert "rank    n   score  cosine lexical  recalled" in text
    assert images(book) == 1


def test_tune_similar_notebook_writes_the_shipped_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from semmem.ranking.similar import SIMILAR_THRESHOLD

    output = tmp_path / "similar.json"
    monkeypatch.setenv("SEMMEM_TUNE_OUTPUT", str(output))
    monkeypatch.setenv("SEMMEM_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SEMMEM_SIMILAR_PAIRS", raising=False)
    book = execute("tune_similar.ipynb", tmp_path)
    text = outputs(book)
    assert "share listed (%)" in text and "own fact listed" in text
    assert images(book) == 2  # the scores by class, the listed share against the threshold
    chosen = json.loads(output.read_text())
    # the code's default is what the notebook chooses on the committed pairs
    assert chosen["similar_threshold"] == SIMILAR_THRESHOLD
    assert set(chosen["held_out"]) == {"restatement", "supersession", "related", "unrelated"}
