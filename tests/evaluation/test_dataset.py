"""Evaluation data: labelled-set loaders (JSONL, LoCoMo) and their preparation (no store).

Metrics, the embedding cache and tuning have their own files beside this one; runs of the
harness over a store and ``semmem eval`` are ``tests/evaluation/test_harness.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidInput
from semmem.evaluation import load_dataset
from semmem.evaluation.dataset import dump_jsonl, load_jsonl
from semmem.evaluation.harness import prepare
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


def test_an_export_with_queries_appended_is_a_labelled_set(tmp_path: Path) -> None:
    """`semmem export` lines are facts numbered as the store numbers them, in the file's own
    partition, as are queries that name none (the README's tuning lines)."""
    path = write_jsonl(tmp_path / "tuning.jsonl", [
        {"n": 1, "text": "Prefers SI units", "ts": "2024-05-01T10:00:00Z",
         "updated": "2024-05-02T10:00:00Z", "revision": 2},
        {"n": 3, "text": "Flies from Lyon", "ts": "2024-05-01T11:00:00Z",
         "updated": "2024-05-01T11:00:00Z", "revision": 1, "note": "an owner's record field"},
        {"type": "query", "text": "which units do I use?", "relevant": ["1"]},
        {"type": "query", "text": "capital of Peru?", "relevant": []},
    ])
    [part] = load_jsonl(path).partitions
    assert part.name == "tuning"
    assert [(f.id, f.text) for f in part.facts] == [("1", "Prefers SI units"),
                                                     ("3", "Flies from Lyon")]
    assert part.facts[0].ts == 1_714_557_600_000
    assert [q.relevant for q in part.queries] == [frozenset({"1"}), frozenset()]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"n": 0, "text": "x"}])
    with pytest.raises(InvalidInput, match=r"bad.jsonl:1: 'n' must be a positive integer"):
        load_jsonl(bad)


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
