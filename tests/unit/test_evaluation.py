"""Evaluation data and figures: labelled-set loaders, metrics, the embedding cache (no store).

Runs of the harness over a store and ``semmem eval`` are ``tests/core/test_evaluation_harness.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from semmem.embedder import HashingEmbedder
from semmem.errors import InvalidInput
from semmem.evaluation import load_dataset
from semmem.evaluation.dataset import dump_jsonl, load_jsonl
from semmem.evaluation.embeddings import DiskCachedEmbedder
from semmem.evaluation.harness import Outcome, prepare
from semmem.evaluation.metrics import budget_metrics, misses, ndcg, reciprocal_rank, summarise
from tests.support.datasets import SMALL_SET, write_jsonl


def locomo_conversation() -> dict[str, object]:
    """A tiny conversation in LoCoMo's layout (text written for this test)."""
    return {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_2_date_time": "10:00 am on 9 June, 2023",
        "session_2_observation": {
            "Ben": [["Ben adopted a puppy called Rex.", "D2:1"],
                    ["Ben walks Rex twice a day.", ["D2:3", "D2:5"]]],
        },
        "session_1_observation": {
            "Ana": [["Ana started pottery classes.", "D1:2"],
                    ["Ana made a blue bowl.", "D1:4"]],
            "Ben": [["Ben is training for a 10k race.", "D1:5"]],
        },
        "qa": [
            {"question": "What pet does Ben have?", "evidence": ["D2:1"], "category": 1},
            {"question": "What did Ana make?", "evidence": ["D1:2; D1:4"], "category": 4},
            {"question": "How often is Rex walked?", "evidence": ["D:2:5"], "category": 2},
            {"question": "What is Ben's sister's name?", "evidence": ["D9:9"], "category": 1},
            {"question": "What did Ben make?", "evidence": ["D1:4"], "category": 5},
        ],
    }


def test_load_jsonl_reads_partitions_facts_and_queries(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "set.jsonl", [
        {"type": "fact", "partition": "p", "id": "f1", "text": "Likes tea",
         "ts": "2024-05-01T10:00:00Z"},
        {"type": "fact", "partition": "p", "id": "f2", "text": "Lives in Oslo"},
        {"type": "query", "partition": "p", "id": "q1", "text": "Drink?", "relevant": ["f1"],
         "category": "food"},
        {"type": "query", "partition": "p", "text": "Capital of Peru?", "relevant": []},
    ])
    labelled = load_jsonl(path)
    [part] = labelled.partitions
    assert [f.id for f in part.facts] == ["f1", "f2"]
    assert part.facts[0].ts == 1_714_557_600_000 and part.facts[1].ts is None
    assert part.queries[0].relevant == frozenset({"f1"})
    assert part.queries[0].category == "food"
    assert part.queries[1].id == "q2" and part.queries[1].relevant == frozenset()


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"type": "query", "partition": "p", "text": "x", "relevant": ["nope"]}, "unknown fact"),
        ({"type": "fact", "partition": "p", "id": "f1", "text": "dup"}, "repeats"),
        ({"type": "note", "partition": "p", "text": "x"}, "'type'"),
        ({"type": "fact", "partition": "p", "id": "f9", "text": "  "}, "'text'"),
        ({"type": "query", "partition": "p", "text": "x", "relevant": "f1"}, "'relevant'"),
    ],
)
def test_load_jsonl_rejects_bad_records_naming_the_line(
    tmp_path: Path, record: dict[str, object], message: str
) -> None:
    path = write_jsonl(tmp_path / "set.jsonl", [
        {"type": "fact", "partition": "p", "id": "f1", "text": "Likes tea"}, record,
    ])
    with pytest.raises(InvalidInput, match=f"set.jsonl:2: .*{message}"):
        load_jsonl(path)


def test_dump_jsonl_round_trips(tmp_path: Path) -> None:
    labelled = load_jsonl(SMALL_SET)
    dump_jsonl(labelled, tmp_path / "copy.jsonl")
    again = load_jsonl(tmp_path / "copy.jsonl")
    assert again.partitions == labelled.partitions


def test_load_locomo_maps_evidence_to_facts_in_session_order(tmp_path: Path) -> None:
    (tmp_path / "7.json").write_text(json.dumps(locomo_conversation()))
    labelled = load_dataset(tmp_path)
    [part] = labelled.partitions
    assert part.name == "7"
    assert [f.text for f in part.facts] == [
        "Ana started pottery classes.", "Ana made a blue bowl.",
        "Ben is training for a 10k race.", "Ben adopted a puppy called Rex.",
        "Ben walks Rex twice a day.",
    ]
    assert part.facts[0].ts == 1_683_554_160_000  # 2023-05-08 13:56 UTC
    by_text = {f.id: f.text for f in part.facts}
    relevant = {q.text: sorted(by_text[f] for f in q.relevant) for q in part.queries}
    assert relevant == {
        "What pet does Ben have?": ["Ben adopted a puppy called Rex."],
        "What did Ana make?": ["Ana made a blue bowl.", "Ana started pottery classes."],
        "How often is Rex walked?": ["Ben walks Rex twice a day."],
    }
    assert part.skipped == 1  # evidence no fact carries; category 5 is dropped silently


def test_load_dataset_missing_path_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such file"):
        load_dataset(tmp_path / "absent.jsonl")


def test_prepare_folds_duplicate_texts_into_one_item(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "set.jsonl", [
        {"type": "fact", "partition": "p", "id": "a", "text": "Likes tea"},
        {"type": "fact", "partition": "p", "id": "b", "text": "Lives in Oslo"},
        {"type": "fact", "partition": "p", "id": "c", "text": "  likes   TEA "},
        {"type": "query", "partition": "p", "text": "Drink?", "relevant": ["c"]},
    ])
    [part] = prepare(load_jsonl(path), HashingEmbedder(), probes=["hello"])
    assert [(it.n, it.text) for it in part.items] == [(1, "Likes tea"), (2, "Lives in Oslo")]
    assert part.queries[0].relevant == frozenset({1})
    assert part.queries[1].query.text == "hello" and part.queries[1].relevant == frozenset()
    assert part.vectors.shape == (2, 64)
    assert part.sizes == {1: len("1. Likes tea"), 2: len("2. Lives in Oslo")}


def outcome(relevant: set[int], ranked: list[int], packed: list[int]) -> Outcome:
    from semmem.evaluation.dataset import Query

    return Outcome("p", Query("q", "q", frozenset()), frozenset(relevant), tuple(ranked),
                   tuple(0.0 for _ in ranked), {100: tuple(packed)},
                   {n: 10 for n in range(1, 10)})


def test_reciprocal_rank_and_ndcg_values() -> None:
    assert reciprocal_rank([4, 2, 7], frozenset({7})) == pytest.approx(1 / 3)
    assert reciprocal_rank([4, 2], frozenset({7})) == 0.0
    assert ndcg([1, 2], frozenset({1, 2})) == pytest.approx(1.0)
    assert ndcg([3, 1], frozenset({1})) == pytest.approx(1 / np.log2(3))
    assert ndcg([3, 4, 1], frozenset({1, 2}), k=2) == 0.0


def test_budget_metrics_gold_recall_hits_and_noise_bytes() -> None:
    results = [
        outcome({1, 2}, [1, 5, 2], [1, 5]),  # half found, first line relevant, one noise line
        outcome({3}, [4, 3], [4]),           # nothing found
    ]
    m = budget_metrics(results, 100)
    assert m.gold_recall == pytest.approx(0.25)
    assert m.gold_recall_micro == pytest.approx(1 / 3)
    assert m.hit_rate == pytest.approx(0.5)
    assert m.mrr == pytest.approx(0.5)
    assert m.noise_bytes == pytest.approx(11.0)  # two noise lines of 10 bytes + newline each
    assert m.used_bytes == pytest.approx((21 + 10) / 2)
    assert [o.relevant for o in misses(results, 100)] == [frozenset({1, 2}), frozenset({3})]


def test_summarise_keeps_off_topic_probes_apart() -> None:
    results = [outcome({1}, [1], [1]), outcome(set(), [2, 3], [2, 3])]
    s = summarise(results, [100])
    assert s.queries == 1 and s.probes == 1
    assert s.gold_recall(100) == 1.0
    assert s.offtopic_bytes[100] == 21.0 and s.offtopic_any[100] == 1.0
    assert s.recall_at[5] == 1.0


def test_disk_cache_embeds_each_text_once(tmp_path: Path) -> None:
    loads: list[int] = []

    def load() -> HashingEmbedder:
        loads.append(1)
        return HashingEmbedder()

    cached = DiskCachedEmbedder("hashing-64", load, tmp_path)
    first = cached.embed_batch(["a cat", "a dog", "a cat"])
    assert cached.misses == 2 and len(loads) == 1
    np.testing.assert_array_equal(first[0], first[2])

    def refuse() -> HashingEmbedder:
        raise AssertionError("the model must not load when every text is cached")

    again = DiskCachedEmbedder("hashing-64", refuse, tmp_path)
    assert again.dim == 64
    np.testing.assert_array_equal(again.embed_batch(["a dog", "a cat"]), first[[1, 0]])


def test_disk_cache_rejects_another_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not other-model"):
        DiskCachedEmbedder("other-model", HashingEmbedder, tmp_path / "c")
