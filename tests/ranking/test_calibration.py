"""Ranking's cosine thresholds carried over to each model's scale (``models/calibration.json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from semmem.embedding.files import default_model_dir
from semmem.ranking.calibration import (
    CALIBRATION_NAME,
    REFERENCE_MODEL,
    Calibration,
    calibrated,
    load_calibration,
)
from semmem.ranking.ranker import RankingConfig
from semmem.ranking.similar import SIMILAR_THRESHOLD
from semmem.settings import Settings
from semmem.wiring import load_ranking, similar_threshold

MODELS = default_model_dir().parent
E5 = MODELS / "multilingual-e5-small"


def test_the_reference_model_keeps_todays_constants_exactly() -> None:
    calibration = load_calibration(MODELS / REFERENCE_MODEL)
    assert calibration.identity
    assert calibrated(RankingConfig(), calibration) == RankingConfig()
    assert calibration.query_offset is None and RankingConfig().query_offset is None
    assert calibration.similar_threshold(SIMILAR_THRESHOLD) == SIMILAR_THRESHOLD
    # the reference's anchors, mapped through its own entry, also give the constants back
    entries = json.loads((MODELS / CALIBRATION_NAME).read_text())
    assert entries[REFERENCE_MODEL]["thresholds"] == {
        "min_score": 0.1, "time_min_cosine": 0.4, "dedupe_threshold": 0.95,
        "similar_threshold": 0.4}


def test_e5_thresholds_come_from_its_recorded_anchors() -> None:
    entries = json.loads((MODELS / CALIBRATION_NAME).read_text())
    calibration = load_calibration(E5)
    ranked = calibrated(RankingConfig(), calibration)
    recorded = entries["multilingual-e5-small"]["thresholds"]
    assert (ranked.min_score, ranked.time_min_cosine, ranked.dedupe_threshold) == (
        recorded["min_score"], recorded["time_min_cosine"], recorded["dedupe_threshold"])
    assert calibration.similar_threshold(SIMILAR_THRESHOLD) == recorded["similar_threshold"]
    # its cosines sit higher: every threshold moves up, and keeps its order
    assert RankingConfig().min_score < ranked.min_score < ranked.time_min_cosine \
        < ranked.dedupe_threshold < 1
    query = entries["multilingual-e5-small"]["anchors"]["query"]
    assert calibration.map("query", entries[REFERENCE_MODEL]["anchors"]["query"]["unrelated"]) \
        == round(query["unrelated"], 4)


def test_e5_ranks_with_its_recorded_query_offset() -> None:
    entries = json.loads((MODELS / CALIBRATION_NAME).read_text())
    recorded = entries["multilingual-e5-small"]["query_offset"]
    assert "query_offset" not in entries[REFERENCE_MODEL]
    calibration = load_calibration(E5)
    assert calibration.query_offset == tuple(recorded) and len(recorded) == 384
    assert calibrated(RankingConfig(), calibration).query_offset == tuple(recorded)
    given = RankingConfig(query_offset=None)  # set explicitly: taken as given
    assert calibrated(given, calibration).query_offset is None
    # an offset alone is a calibration: not the identity
    assert not Calibration("m", {}, (0.1, 0.2)).identity


def test_explicit_and_switched_off_thresholds_are_left_alone() -> None:
    calibration = Calibration("m", {side: ((0.1, 0.7), (0.7, 0.9), (1.0, 1.0))
                                    for side in ("query", "stored")})
    assert calibration.map("query", 0.4) == 0.8
    assert calibration.map("query", 0.0) == round(0.7 - 0.1 * (0.2 / 0.6), 4)  # extrapolated
    given = RankingConfig(min_score=0.3, dedupe_threshold=1.01)
    out = calibrated(given, calibration)
    assert (out.min_score, out.dedupe_threshold) == (0.3, 1.01)
    assert out.time_min_cosine == 0.8
    assert calibrated(RankingConfig(min_score=-1.0), calibration).min_score == -1.0


def test_wiring_calibrates_for_the_configured_model(tmp_path: Path) -> None:
    e5 = Settings(model=E5)
    assert load_ranking(e5) == calibrated(RankingConfig(), load_calibration(E5))
    assert similar_threshold(e5) == load_calibration(E5).similar_threshold(SIMILAR_THRESHOLD)
    assert similar_threshold(Settings(model=E5, similar_threshold=0.5)) == 0.5
    assert load_ranking(Settings()) == RankingConfig()
    ranking = tmp_path / "ranking.json"
    ranking.write_text(json.dumps({"min_score": 0.2}))
    from_file = load_ranking(Settings(model=E5, ranking=ranking))
    assert from_file.min_score == 0.2
    assert from_file.dedupe_threshold == load_ranking(e5).dedupe_threshold


def test_a_model_missing_from_the_file_is_not_calibrated(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    assert load_calibration(tmp_path / "other").identity
    shutil.copy(MODELS / CALIBRATION_NAME, tmp_path / CALIBRATION_NAME)
    assert load_calibration(tmp_path / "other").identity
    assert not load_calibration(tmp_path / E5.name).identity


@pytest.mark.parametrize("side", ["query", "stored"])
def test_the_map_is_monotonic(side: str) -> None:
    calibration = load_calibration(E5)
    values = [calibration.map(side, x / 100) for x in range(-20, 101)]
    assert values == sorted(values)
    assert calibration.map(side, 1.0) == 1.0
