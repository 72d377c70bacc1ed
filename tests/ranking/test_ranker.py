"""Ranking: combined score, floors, centring, recency, near-duplicates, the config file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from semmem.items import Item
from semmem.ranking.lexical import Bm25Index
from semmem.ranking.ranker import Ranker, RankingConfig, Scored
from semmem.store.views import Head, PartitionSnapshot

DAY = 86_400_000


def unit(*coords: float, dim: int = 8) -> np.ndarray:
    vec = np.zeros(dim, dtype=np.float32)
    vec[: len(coords)] = coords
    return vec / np.linalg.norm(vec)


def snapshot(texts: Sequence[str], vectors: Sequence[np.ndarray],
             updated: Sequence[int] | None = None) -> PartitionSnapshot:
    stamps = list(updated) if updated is not None else [1000 * (i + 1) for i in range(len(texts))]
    items = [Item(i + 1, t, stamps[i], stamps[i], 1, i + 1, "test")
             for i, t in enumerate(texts)]
    matrix = np.ascontiguousarray(np.stack(vectors), dtype=np.float32)
    return PartitionSnapshot(items, matrix, Head("p", 1, len(items), len(items), "test"))


def numbers(scored: list[Scored]) -> list[int]:
    return [s.item.n for s in scored]


COSINE_ONLY = RankingConfig.plain_cosine()


def test_rank_plain_cosine_orders_by_similarity() -> None:
    snap = snapshot(["far", "near", "middle"],
                    [unit(0, 1), unit(1, 0.1), unit(1, 1)])
    ranked = Ranker(COSINE_ONLY).rank(snap, unit(1, 0), "q")
    assert numbers(ranked) == [2, 3, 1]
    assert ranked[0].semantic == pytest.approx(float(unit(1, 0.1)[0]), abs=1e-6)
    assert ranked[0].score == pytest.approx(ranked[0].semantic, abs=1e-6)


def test_rank_ties_go_to_the_lower_number() -> None:
    snap = snapshot(["a", "b", "c"], [unit(0, 1), unit(1, 0), unit(1, 0)])
    assert numbers(Ranker(COSINE_ONLY).rank(snap, unit(1, 0), "q")) == [2, 3, 1]


def test_rank_floor_leaves_out_items_below_min_score() -> None:
    snap = snapshot(["on topic", "off topic"], [unit(1, 0.2), unit(0.05, 1)])
    config = COSINE_ONLY.model_copy(update={"min_score": 0.5})
    ranker = Ranker(config)
    assert numbers(ranker.rank(snap, unit(1, 0), "q")) == [1]
    assert numbers(ranker.rank(snap, unit(1, 0), "q", floor=False)) == [1, 2]


def test_rank_relative_floor_cuts_the_tail() -> None:
    snap = snapshot(["best", "close", "tail"], [unit(1, 0), unit(1, 0.3), unit(1, 1.5)])
    config = COSINE_ONLY.model_copy(update={"relative_floor": 0.2})
    assert numbers(Ranker(config).rank(snap, unit(1, 0), "q")) == [1, 2]


def test_rank_candidates_caps_the_list() -> None:
    snap = snapshot([f"t{i}" for i in range(6)], [unit(1, i / 10) for i in range(6)])
    config = COSINE_ONLY.model_copy(update={"candidates": 3})
    assert numbers(Ranker(config).rank(snap, unit(1, 0), "q")) == [1, 2, 3]


def test_rank_empty_snapshot_is_empty() -> None:
    empty = PartitionSnapshot.empty("p", 8)
    assert Ranker().rank(empty, unit(1, 0), "anything") == []


def test_rank_lexical_evidence_lifts_the_exact_term_match() -> None:
    same = unit(1, 1)
    snap = snapshot(["Pixel needs thyroid pills", "The garden needs watering"], [same, same])
    config = COSINE_ONLY.model_copy(update={"lexical_weight": 0.4})
    ranked = Ranker(config).rank(snap, unit(1, 1), "give Pixel her pills")
    assert numbers(ranked) == [1, 2]
    assert ranked[0].lexical == 1.0 and ranked[1].lexical == 0.0
    assert ranked[0].score == pytest.approx(ranked[0].semantic + 0.4, abs=1e-6)


SHARED = [unit(5, 1, 0, 0), unit(5, 0, 1, 0), unit(1, 0, 0, 1), unit(5, 0, 0, 0, 1)]


def test_rank_centering_removes_what_most_items_share() -> None:
    # Most items are dominated by one shared direction (axis 0), as facts about one person
    # are; the query touches it too but is specifically about item 3's topic (axis 3).
    snap = snapshot(["a", "b", "c", "d"], SHARED)
    query = unit(5, 0, 0, 1)
    assert numbers(Ranker(COSINE_ONLY).rank(snap, query, "q"))[0] == 1
    centred = COSINE_ONLY.model_copy(update={"centering": 1.0, "centering_items": 0.0})
    assert numbers(Ranker(centred).rank(snap, query, "q"))[0] == 3


def test_rank_centering_fades_in_small_partitions() -> None:
    snap = snapshot(["a", "b", "c", "d"], SHARED)
    query = unit(5, 0, 0, 1)
    shrunk = COSINE_ONLY.model_copy(update={"centering": 1.0, "centering_items": 1e6})
    assert numbers(Ranker(shrunk).rank(snap, query, "q")) == numbers(
        Ranker(COSINE_ONLY).rank(snap, query, "q"))


def test_rank_recency_prefers_the_newer_of_equals() -> None:
    snap = snapshot(["old", "new"], [unit(1, 0), unit(1, 0)], updated=[0, 60 * DAY])
    config = COSINE_ONLY.model_copy(update={"recency_weight": 0.1})
    ranked = Ranker(config).rank(snap, unit(1, 0), "q")
    assert numbers(ranked) == [2, 1]
    assert ranked[0].score - ranked[1].score == pytest.approx(0.1 * (1 - 0.25), abs=1e-5)


WORDS = ["camping", "jazz", "bass", "pixel", "pills", "thyroid", "garden", "italian", "tutor",
         "flights", "aisle", "maya"]


def scored_partition(n: int, seed: int) -> tuple[PartitionSnapshot, np.ndarray, str]:
    """Items sharing a common direction (as one person's facts do), some texts and a query."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 32)) + 2.0 * rng.normal(size=32)
    vectors[n // 2] = vectors[n // 3]  # exact ties
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 6)))) for _ in range(n)]
    stamps = [int(x) for x in rng.integers(0, 90 * DAY, size=n)]
    query = vectors[7] + 0.5 * rng.normal(size=32)
    return snapshot(texts, list(vectors), stamps), query / np.linalg.norm(query), \
        "pixel needs her pills before camping"


def reference_scores(
    config: RankingConfig, snap: PartitionSnapshot, query_vec: np.ndarray, query: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranking formula computed the obvious way: centre, normalise, dot (float64)."""
    x = snap.vectors.astype(np.float64)
    q = query_vec.astype(np.float64)
    share = config.centering * snap.count / (snap.count + config.centering_items)
    mean = share * x.mean(axis=0)
    centred = x - mean
    # the model's query offset: the queries' own common point, removed from the query alone
    offset = share * np.asarray(config.query_offset or np.zeros(x.shape[1]), np.float64)
    semantic = centred @ (q - mean - offset) / (
        np.linalg.norm(centred, axis=1) * np.linalg.norm(q - mean - offset))
    texts = [it.text for it in snap.items]
    raw, _ = Bm25Index.build(texts, config.bm25_k1, config.bm25_b,
                             stemming=config.stemming).scores(query)
    lexical = raw / raw.max() if raw.max() > 0 else raw
    if config.lexical_weight == 0:
        lexical = np.zeros_like(lexical)  # off: not computed, reported as 0
    updated = np.array([it.updated for it in snap.items], dtype=np.float64)
    recency = 0.5 ** ((updated.max() - updated) / (config.recency_half_life_days * DAY))
    combined = (config.semantic_weight * semantic + config.lexical_weight * lexical
                + config.recency_weight * recency)
    return combined, x @ q, lexical


CONFIGS = [
    RankingConfig(),
    COSINE_ONLY,
    RankingConfig(centering=0.5, centering_items=0.0, lexical_weight=0.7, recency_weight=0.1,
                  stemming=False),
    RankingConfig(query_offset=tuple(
        0.2 * np.random.default_rng(5).normal(size=32) / np.sqrt(32))),
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", [1, 2])
def test_score_matches_the_straightforward_formula(config: RankingConfig, seed: int) -> None:
    snap, query_vec, query = scored_partition(600, seed)
    combined, cosine, lexical = Ranker(config).score(snap, query_vec.astype(np.float32), query)
    ref_combined, ref_cosine, ref_lexical = reference_scores(config, snap, query_vec, query)
    np.testing.assert_allclose(cosine, ref_cosine, atol=1e-5)
    np.testing.assert_allclose(lexical, ref_lexical, atol=1e-5)
    np.testing.assert_allclose(combined, ref_combined, atol=1e-5)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("floor", [True, False])
def test_rank_lists_score_results_best_first(config: RankingConfig, floor: bool) -> None:
    snap, query_vec, query = scored_partition(600, 3)
    ranker = Ranker(config.model_copy(update={"candidates": 50, "min_score": 0.0}))
    qvec = query_vec.astype(np.float32)
    combined, cosine, lexical = ranker.score(snap, qvec, query)
    eligible = [i for i in range(snap.count) if not floor or cosine[i] >= 0.0]
    expected = sorted(eligible, key=lambda i: (-combined[i], i))[:50]
    ranked = ranker.rank(snap, qvec, query, floor=floor)
    assert [s.index for s in ranked] == expected
    for s in ranked:
        assert s.item is snap.items[s.index]
        assert (s.score, s.semantic, s.lexical) == (
            float(combined[s.index]), float(cosine[s.index]), float(lexical[s.index]))
        assert type(s.index) is int and type(s.score) is float


def naive_dedupe(snap: PartitionSnapshot, ranked: list[Scored], threshold: float) -> list[int]:
    kept: list[int] = []
    for cand in ranked:
        if any(float(snap.vectors[k] @ snap.vectors[cand.index]) >= threshold for k in kept):
            continue
        kept.append(cand.index)
    return [snap.items[i].n for i in kept]


def test_without_near_duplicates_matches_one_by_one_reference() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(60, 16)).astype(np.float32)
    twins = base[[3, 10, 33, 40, 41, 58]] + 0.05 * rng.normal(size=(6, 16)).astype(np.float32)
    vectors = [v / np.linalg.norm(v) for v in np.vstack([base, twins])]
    snap = snapshot([f"t{i}" for i in range(len(vectors))], vectors)
    ranker = Ranker(COSINE_ONLY.model_copy(update={"dedupe_threshold": 0.95}))
    ranked = ranker.rank(snap, vectors[3], "q")
    deduped = numbers(list(ranker.without_near_duplicates(snap, ranked)))
    assert deduped == naive_dedupe(snap, ranked, 0.95)
    assert len(deduped) < len(ranked)  # the planted twins were skipped


def arc(rng: np.random.Generator, steps: int, dim: int = 16) -> list[np.ndarray]:
    """Points along a great circle, neighbours ~0.96 similar: chains of near-duplicates."""
    u, w = np.linalg.qr(rng.normal(size=(dim, 2)))[0].T
    angle = float(rng.uniform(0.2, 0.3))  # cos 0.96–0.98: next neighbours are near-duplicates
    return [np.cos(k * angle) * u + np.sin(k * angle) * w for k in range(steps)]


@pytest.mark.parametrize("seed", range(6))
def test_without_near_duplicates_matches_reference_across_blocks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = [v for _ in range(30) for v in arc(rng, int(rng.integers(1, 7)))]
    vectors += [v / np.linalg.norm(v) for v in rng.normal(size=(40, 16))]
    snap = snapshot([f"t{i}" for i in range(len(vectors))], vectors)
    ranked = [Scored(int(i), snap.items[i], 0.0, 0.0, 0.0)
              for i in rng.permutation(len(vectors))]
    ranker = Ranker(COSINE_ONLY.model_copy(update={"dedupe_threshold": 0.95}))
    kept = numbers(list(ranker.without_near_duplicates(snap, ranked)))
    assert kept == naive_dedupe(snap, ranked, 0.95)
    assert len(ranked) > 4 * 32 and len(kept) < len(ranked)


def test_without_near_duplicates_keeps_the_far_end_of_a_chain() -> None:
    # b is too close to a, c too close to b but not to a: b goes, so c stays.
    a, b, c = arc(np.random.default_rng(0), 3)
    snap = snapshot(["a", "b", "c"], [a, b, c])
    ranked = [Scored(i, snap.items[i], 0.0, 0.0, 0.0) for i in range(3)]
    threshold = float(a @ b) - 1e-4
    assert float(a @ c) < threshold <= float(b @ c)
    ranker = Ranker(COSINE_ONLY.model_copy(update={"dedupe_threshold": threshold}))
    assert numbers(list(ranker.without_near_duplicates(snap, ranked))) == [1, 3]


def test_without_near_duplicates_off_above_one() -> None:
    same = unit(1, 0)
    snap = snapshot(["a", "a again"], [same, same])
    ranker = Ranker(COSINE_ONLY)
    ranked = ranker.rank(snap, same, "q")
    assert numbers(list(ranker.without_near_duplicates(snap, ranked))) == [1, 2]


def test_without_near_duplicates_yields_lazily() -> None:
    snap = snapshot([f"t{i}" for i in range(100)], [unit(1, i / 50) for i in range(100)])
    ranker = Ranker(COSINE_ONLY.model_copy(update={"dedupe_threshold": 0.999999}))
    stream = ranker.without_near_duplicates(snap, ranker.rank(snap, unit(1, 0), "q"))
    assert next(stream).item.n == 1


def test_config_file_round_trip(tmp_path: Path) -> None:
    config = RankingConfig(lexical_weight=0.25, min_score=0.05, relative_floor=0.3)
    path = tmp_path / "ranking.json"
    config.to_file(path)
    assert json.loads(path.read_text())["lexical_weight"] == 0.25
    assert RankingConfig.from_file(path) == config


def test_config_file_ignores_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ranking.json"
    path.write_text('{"lexical_weight": 0.1}')
    monkeypatch.setenv("SEMMEM_RANKING_MIN_SCORE", "0.5")
    loaded = RankingConfig.from_file(path)
    assert loaded.lexical_weight == 0.1
    assert loaded.min_score == RankingConfig.model_fields["min_score"].default


def test_config_env_sets_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMMEM_RANKING_LEXICAL_WEIGHT", "0.7")
    monkeypatch.setenv("SEMMEM_RANKING_STEMMING", "false")
    config = RankingConfig()
    assert config.lexical_weight == 0.7 and config.stemming is False


def test_config_file_rejects_unknown_and_invalid_knobs(tmp_path: Path) -> None:
    path = tmp_path / "ranking.json"
    path.write_text('{"lexical_wieght": 0.1}')
    with pytest.raises(ValidationError):
        RankingConfig.from_file(path)
    path.write_text('{"centering": 2}')
    with pytest.raises(ValidationError):
        RankingConfig.from_file(path)


def test_time_weight_lifts_a_timed_fact_for_a_when_question_only() -> None:
    texts = ["Ana started pottery classes.", "Ana started pottery classes last May, 2023."]
    snap = snapshot(texts, [unit(1, 0.1), unit(1, 0.2)])
    config = COSINE_ONLY.model_copy(update={"time_weight": 0.2, "time_min_cosine": 0.4})
    query = unit(1, 0)  # closer to the first fact
    assert numbers(Ranker(config).rank(snap, query, "What did Ana start?")) == [1, 2]
    lifted = Ranker(config).rank(snap, query, "When did Ana start pottery?")
    assert numbers(lifted) == [2, 1]
    assert lifted[0].score == pytest.approx(lifted[0].semantic + 0.2, abs=1e-6)
    gated = config.model_copy(update={"time_min_cosine": 0.999})  # neither fact is that close
    assert numbers(Ranker(gated).rank(snap, query, "When did Ana start pottery?")) == [1, 2]


def test_relevance_falls_with_rank_and_gap_to_the_best() -> None:
    snap = snapshot(["a", "b", "c"], [unit(1, 0.1), unit(1, 0.5), unit(1, 2)])
    ranked = Ranker().rank(snap, unit(1, 0), "q")
    chance = Ranker().relevance(ranked)
    assert len(chance) == 3 and all(0 < p < 1 for p in chance)
    assert chance == sorted(chance, reverse=True)
    assert Ranker().relevance([]) == []


def test_pack_expected_chooses_short_lines_and_keeps_rank_order() -> None:
    texts = ["a" * 20, "b" * 60, "c" * 20, "d" * 20]
    snap = snapshot(texts, [unit(1, 0.1), unit(1, 0.2), unit(1, 0.3), unit(1, 0.4)])
    query = unit(1, 0)
    # Equal chances: the set with the most lines wins; rank order decides otherwise.
    flat = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    by_rank = Ranker(COSINE_ONLY)
    by_value = Ranker(COSINE_ONLY.model_copy(
        update={"packing": "expected", "relevance_model": flat}))
    ranked = by_rank.rank(snap, query, "q")
    assert numbers(by_rank.pack(snap, ranked, 90, 100)[1]) == [1, 2]
    packed, chosen = by_value.pack(snap, ranked, 90, 100)
    assert numbers(chosen) == [1, 3, 4] and packed.bytes <= 90


def test_config_file_keeps_the_relevance_model(tmp_path: Path) -> None:
    config = RankingConfig(packing="expected", relevance_model=(1, 2, 3, 4, 5, 6), time_weight=0)
    config.to_file(tmp_path / "r.json")
    assert RankingConfig.from_file(tmp_path / "r.json") == config
    with pytest.raises(ValidationError):
        RankingConfig(packing="knapsack")
