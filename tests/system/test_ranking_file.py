"""`semmem serve --ranking FILE` says that the file was loaded and what it changed from the
defaults: in a log line at start and in `/readyz` (issue 62, item 2); before, nothing did."""

from __future__ import annotations

import json
from pathlib import Path

from semmem.ranking.ranker import RankingConfig
from tests.support.server import ServerProcess


def _ready(tmp_path: Path, **env: str) -> tuple[dict[str, object], str]:
    server = ServerProcess(tmp_path / "db", env={"SEMMEM_LOG_LEVEL": "info", **env}).start()
    try:
        server.wait_ready()
        with server.client() as c:
            body = c.get("/readyz").json()
    finally:
        server.stop()
    return body, server.output()


def test_a_ranking_file_is_named_with_what_it_changed(tmp_path: Path) -> None:
    ranking = tmp_path / "ranking.json"
    RankingConfig(lexical_weight=0.1, stemming=False).to_file(ranking)
    body, log = _ready(tmp_path, SEMMEM_RANKING=str(ranking))
    assert body["ranking"] == {"file": str(ranking),
                               "changed": {"lexical_weight": 0.1, "stemming": False}}
    assert (f"ranking: file {ranking} loaded; changed from the defaults: lexical_weight=0.1, "
            "stemming=False") in log, log


def test_a_file_of_the_defaults_and_no_file_say_nothing_changed(tmp_path: Path) -> None:
    ranking = tmp_path / "ranking.json"
    RankingConfig().to_file(ranking)  # what a tuning run that beat nothing writes
    assert set(json.loads(ranking.read_text())) == set(RankingConfig.model_fields)
    body, log = _ready(tmp_path, SEMMEM_RANKING=str(ranking))
    assert body["ranking"] == {"file": str(ranking), "changed": {}}
    assert f"ranking: file {ranking} loaded; changed from the defaults: nothing" in log
    body, log = _ready(tmp_path)
    assert body["ranking"] == {"file": None, "changed": {}}
    assert "ranking: no ranking file; changed from the defaults: nothing" in log
