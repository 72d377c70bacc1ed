"""Issue 62, item 7's small ones: what `reindex` counted, a search score within [-1, 1], and
the README's notebooks section naming every variable the notebooks read."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from semmem.cli.commands import app
from semmem.embedding.files import default_model_dir, load_spec
from tests.support.server import REPO

runner = CliRunner()


def _run(tmp_path: Path, *args: str) -> str:
    result = runner.invoke(app, [*args], env={"SEMMEM_DATA": str(tmp_path / "db")})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_reindex_says_what_it_counted(tmp_path: Path) -> None:
    """It answered `{"reindexed": 26}`: 26 of what?"""
    _run(tmp_path, "remember", "Prefers metric units", "-p", "carol")
    _run(tmp_path, "remember", "Flies from Lyon", "-p", "carol")
    _run(tmp_path, "remember", "Has a cat", "-p", "dave")
    out = json.loads(_run(tmp_path, "reindex"))
    assert out == {"reindexed": {"partitions": 2, "items": 3,
                                 "model": load_spec(default_model_dir()).model_id}}


def test_a_search_score_is_never_above_one(tmp_path: Path) -> None:
    """The README's walk-through: "units" against "Prefers SI units" scored 1.0021 (the
    cosine plus the lexical term of the best lexical match)."""
    _run(tmp_path, "remember", "Prefers metric units", "-p", "carol")
    _run(tmp_path, "remember", "Flies from Lyon", "-p", "carol")
    _run(tmp_path, "update", "1", "Prefers SI units", "-p", "carol")
    found = json.loads(_run(tmp_path, "search", "units", "-p", "carol"))
    scores = [item["score"] for item in found["items"]]
    assert found["items"][0]["text"] == "Prefers SI units"
    assert scores[0] == 1.0 and all(-1.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True)


def test_every_variable_a_notebook_reads_is_documented() -> None:
    """`SEMMEM_EXPLORE_PARTITION` (the explore notebook opens an empty `maya` partition of
    your store without it) was documented nowhere but in the notebook itself."""
    docs = (REPO / "README.md").read_text() + "".join(
        p.read_text() for p in (REPO / "docs").glob("*.md"))
    read: set[str] = set()
    for book in (REPO / "notebooks").glob("*.ipynb"):
        code = "".join("".join(c["source"]) for c in json.loads(book.read_text())["cells"]
                       if c["cell_type"] == "code")
        read |= set(re.findall(r"environ(?:\.get\(|\[)\"(SEMMEM_[A-Z_]+)\"", code))
    assert {"SEMMEM_EXPLORE_PARTITION", "SEMMEM_TUNE_DATASET"} <= read
    assert sorted(v for v in read if v not in docs) == []


def test_the_readme_starts_the_console_and_says_where_the_client_goes() -> None:
    readme = (REPO / "README.md").read_text()
    console = readme.split("## Owner console")[1].split("\n## ")[0]
    assert re.search(r"^SEMMEM_TOKENS=\S+ SEMMEM_ADMIN_TOKENS=\S+ \.venv/bin/semmem serve$",
                     console, re.M), console
    assert "/console/" in console
    client = (REPO / "clients" / "python" / "README.md").read_text()
    assert "your application's own environment" in client and "not into the server's" in client
