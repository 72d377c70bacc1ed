"""Write-time hints on dense memories and the owners' groups (issue 30), with the real model:
a fact is listed only when it stands out from the rest of the memory, and the owners' view
groups by the strongest links first."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.evaluation.similar import load_pairs
from semmem.memory import Memory
from semmem.store import Store
from tests.support.memory import open_memory

LONG_PAIRS = Path(__file__).parents[1] / "data" / "similar_long_pairs.jsonl"
LYON = ["Lives in Lyon with two cats", "Has two cats and lives in Lyon, France",
        "Prefers metric units", "Moved from Lyon to Berlin last month", "Allergic to peanuts"]


@pytest.mark.model
async def test_owner_groups_keep_the_closest_restatement_with_the_real_model(
        tmp_path: Path, real_embedder: Any) -> None:
    """The issue's case: #2 restates #1 (hinted at write, 0.94) and #4 replaced #1; the
    newest fact's star used to take #1 first and never show #2."""
    memory = await open_memory(tmp_path / "db", real_embedder)
    answers = [await memory.remember("p", text) for text in LYON]
    assert [(h["n"], round(h["score"], 2)) for h in answers[1]["similar"]] == [(1, 0.94)]
    found = await memory.similar("p")
    assert [[(m.item.n, m.to) for m in g.members] for g in found] == [[(4, 1), (2, 1), (1, 2)]]
    scores = {m.item.n: round(m.score, 2) for m in found[0].members}
    assert scores == {4: 0.46, 2: 0.94, 1: 0.94}
    await memory.close()


@pytest.mark.model
async def test_a_dense_memory_lists_only_facts_that_stand_out_with_the_real_model(
        tmp_path: Path, real_embedder: Any) -> None:
    """A memory of long facts about one person: nearly every pair passes the threshold, yet a
    restatement lists its fact and a distinct fact about the same person mostly lists none
    (the threshold alone listed three for almost every write). The held-out pairs about one
    person, each new text written in turn."""
    pairs = [p for p in load_pairs(LONG_PAIRS) if p.old.startswith("Maren")]
    olds = list(dict.fromkeys(p.old for p in pairs))
    memory = await open_memory(tmp_path / "db", real_embedder)
    await memory.import_("p", [{"text": old, "n": i} for i, old in enumerate(olds, 1)])
    await memory.recall("p", "Maren", 1024)  # the view a running server has cached
    numbers = {old: i for i, old in enumerate(olds, 1)}
    pairs = [p for p in pairs if p.split == "held_out"]
    listed: dict[str, list[int]] = {}
    found: dict[str, list[bool]] = {}
    for pair in pairs:
        hints = [h["n"] for h in (await memory.remember("p", pair.new)).get("similar", [])]
        listed.setdefault(pair.kind, []).append(len(hints))
        found.setdefault(pair.kind, []).append(numbers[pair.old] in hints)
    await memory.close()
    assert statistics.mean(found["restatement"]) >= 0.9
    assert statistics.mean(found["supersession"]) >= 0.75
    assert statistics.mean(listed["related"] + listed["unrelated"]) <= 0.8
    assert not any(found["unrelated"])


async def test_owner_groups_past_the_index_threshold_link_best_matches(tmp_path: Path) -> None:
    """Past the index threshold each fact's best match comes from its index neighbours (the
    index built, then more facts than it holds): the same groups as the exact scoring."""
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=50)
    await store.open()
    memory = Memory(store, embedder, index_candidates=30)
    await memory.import_("p", [{"text": f"base {i} {i * 7}"} for i in range(80)])
    await memory.maintain("p")
    for text in ("Alice drinks green tea", "Bob cycles to work", "Alice drinks green tea daily",
                 "Bob cycles to work daily"):
        await memory.remember("p", text)
    assert (await store.read_view("p")).indexed
    found = await memory.similar("p", 0.85)
    # Equally close pairs: the one updated last comes first.
    assert [[(m.item.n, m.to) for m in g.members] for g in found] == [
        [(84, 82), (82, 84)], [(83, 81), (81, 83)]]
    await memory.close()
