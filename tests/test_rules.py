"""Exactness of the core's rules (issue 15): duplicates of hidden items, writes that store
nothing leave no trace, the cursor rule for items created after it, bounded record retention,
map import flags, and one maintenance pass purging a forgotten text."""

from __future__ import annotations

import logging
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pytest

from semmem.contract import DEADLINE_HORIZON_MS, make_cursor
from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import Conflict, NotFound
from semmem.importing import records_from_map
from semmem.items import now_ms
from semmem.memory import Memory, Operation
from semmem.store.rows import table_name
from tests.support.files import files_with
from tests.support.memory import older_table, open_memory

HIDDEN = [{"status": "inactive"}, {"surfacing": "hold"}, {"mergedInto": 2}]


async def _versions(memory: Memory, partition: str) -> int:
    return (await memory.stats(partition))["version"]


# ----- 1: duplicates match only items recall can show ---------------------------------------
@pytest.mark.parametrize("hidden", HIDDEN)
async def test_remembering_a_hidden_items_text_stores_a_visible_item(
        memory: Memory, hidden: dict[str, Any]) -> None:
    await memory.remember("p", "Alice drinks green tea")
    await memory.remember("p", "Bob cycles to work")
    await memory.update("p", 1, attrs=hidden)
    result = await memory.remember("p", "alice drinks  GREEN tea")
    assert result == {"status": "stored", "n": 3, "count": 3}
    recalled = await memory.recall("p", "Alice drinks green tea", 1000)
    assert "3. alice drinks  GREEN tea" in recalled.text
    assert (await memory.get("p", 1)).attrs == hidden  # type: ignore[union-attr]
    # now the visible one is the duplicate, whichever view the write decides on
    again = await memory.remember("p", "Alice drinks green tea")
    assert again == {"status": "stored", "n": 3, "count": 3, "existing": True}
    fresh = await open_memory(Path(memory.uri), HashingEmbedder())  # no cached snapshot
    try:
        assert (await fresh.remember("p", "ALICE drinks green tea"))["n"] == 3
    finally:
        await fresh.close()


async def test_a_visible_duplicate_is_found_beside_a_hidden_one_with_a_higher_number(
        memory: Memory) -> None:
    await memory.remember("p", "Carol likes jazz")
    await memory.remember("p", "Other fact")
    await memory.update("p", 2, text="carol likes JAZZ")  # the same key, a higher number
    await memory.update("p", 2, attrs={"surfacing": "hold"})
    assert (await memory.remember("p", "Carol likes jazz"))["n"] == 1
    fresh = await open_memory(Path(memory.uri), HashingEmbedder())
    try:
        assert (await fresh.remember("p", "carol likes jazz"))["n"] == 1
    finally:
        await fresh.close()


# ----- 3: writes that store nothing, and reads, leave no trace ------------------------------
async def test_refused_writes_create_no_partition(memory: Memory) -> None:
    with pytest.raises(NotFound):
        await memory.forget("ghost", 5)
    with pytest.raises(NotFound):
        await memory.update("ghost", 1, "text")
    op = Operation.of("late", "remember", {"text": "x"}, None, now_ms() - 1)
    with pytest.raises(Exception, match="deadline"):
        await memory.remember("ghost", "late fact", op=op)
    await memory.recall("ghost", "anything", 100)
    assert await memory.partitions() == []
    assert not list(Path(memory.uri).glob(f"{table_name('ghost')}*"))


async def test_recall_of_a_schema_one_table_writes_nothing(tmp_path: Path) -> None:
    uri = await older_table(tmp_path, ["Alice likes tea"], ["dkey"])  # a schema-1 store's
    before = lance.dataset(uri).version
    fresh = await open_memory(tmp_path, HashingEmbedder())
    try:
        assert "1. Alice likes tea" in (await fresh.recall("p", "tea", 100)).text
        assert (await fresh.search("p", "tea"))["count"] == 1
        await fresh.stats("p")
        assert lance.dataset(uri).version == before  # no migration on a read
        assert (await fresh.remember("p", "alice likes TEA"))["existing"] is True
        assert "dkey" in lance.dataset(uri).schema.names  # migrated by the first write
    finally:
        await fresh.close()


# ----- 7: the cursor rule -------------------------------------------------------------------
async def test_items_created_after_the_cursor_can_be_edited_under_it(memory: Memory) -> None:
    await memory.remember("p", "Old fact")
    cursor = (await memory.recall("p", None, 1000)).cursor
    n = (await memory.remember("p", "New fact learned from the write's result"))["n"]
    assert (await memory.update("p", n, "New fact, edited", cursor=cursor))["n"] == n
    assert (await memory.update("p", n, "New fact, edited again", cursor=cursor))["n"] == n
    assert (await memory.forget("p", n, cursor=cursor))["forgotten"] is True
    with pytest.raises(NotFound):  # created and forgotten after the cursor: just gone
        await memory.forget("p", n, cursor=cursor)


async def test_items_that_existed_at_the_cursor_still_conflict(memory: Memory) -> None:
    await memory.remember("p", "First")
    await memory.remember("p", "Second")
    await memory.update("p", 2, "Second, revised")  # revision 2 before the cursor
    cursor = (await memory.recall("p", None, 1000)).cursor
    await memory.update("p", 1, "First, changed by another turn")
    await memory.update("p", 2, "Second, changed by another turn")
    with pytest.raises(Conflict):
        await memory.update("p", 1, "mine", cursor=cursor)
    with pytest.raises(Conflict):
        await memory.update("p", 2, "mine", cursor=cursor)
    await memory.forget("p", 1)
    with pytest.raises(Conflict):
        await memory.forget("p", 1, cursor=cursor)
    fresh = await open_memory(Path(memory.uri), HashingEmbedder())  # read from the table
    try:
        with pytest.raises(Conflict):
            await fresh.update("p", 2, "mine", cursor=cursor)
        n = (await fresh.remember("p", "Third"))["n"]
        await fresh.update("p", n, "Third, revised")
        again = await open_memory(Path(memory.uri), HashingEmbedder())
        assert (await again.update("p", n, "Third, mine", cursor=cursor))["n"] == n
        await again.close()
    finally:
        await fresh.close()


async def test_the_cursor_rule_holds_for_a_cursor_from_an_empty_partition(
        memory: Memory) -> None:
    cursor = (await memory.recall("p", None, 1000)).cursor
    assert cursor == make_cursor("p", 0)
    n = (await memory.remember("p", "The first fact"))["n"]
    assert (await memory.update("p", n, "The first fact, edited", cursor=cursor))["n"] == n


# ----- 6: idempotency retention is bounded --------------------------------------------------
async def test_a_far_deadline_does_not_keep_a_record_forever(memory: Memory) -> None:
    far = now_ms() + 100 * 365 * 24 * 3600 * 1000
    op = Operation.of("op-far", "remember", {"text": "x"}, None, far)
    await memory.remember("p", "A fact with a far deadline", op=op)
    snap = await memory.snapshot("p")
    (record,) = snap.ops.values()
    bound = now_ms() + max(memory.idempotency_ttl_ms, DEADLINE_HORIZON_MS)
    assert record.expires <= bound


# ----- 9: map import flags ------------------------------------------------------------------
def test_map_flags_map_to_record_fields() -> None:
    records = records_from_map({
        "a": {"text": "inactive one", "inactive": True},
        "b": {"text": "held one", "held": True},
        "c": {"text": "merged one", "merged": "a"},
        "d": {"text": "active one", "status": "Active"},
        "e": {"text": "plain one", "inactive": False, "held": False},
        "f": {"text": "status inactive", "status": "INACTIVE"},
    })
    by_slug = {r["slug"]: r for r in records}
    assert by_slug["a"]["status"] == "inactive"
    assert by_slug["b"]["surfacing"] == "hold"
    assert by_slug["c"]["mergedInto"] == "a"
    assert by_slug["d"].get("status") == "active"
    assert "status" not in by_slug["e"] and "surfacing" not in by_slug["e"]
    assert by_slug["f"]["status"] == "inactive"


async def test_map_flags_hide_imported_records_from_recall(memory: Memory) -> None:
    records = records_from_map({
        "a": {"text": "Inactive tea fact", "inactive": True},
        "b": {"text": "Held tea fact", "held": True},
        "c": {"text": "Merged tea fact", "merged": "d"},
        "d": {"text": "Active tea fact", "status": "Active"},
    })
    await memory.import_("p", records)
    text = (await memory.recall("p", "tea fact", 4000)).text
    assert text.splitlines() == ["4. Active tea fact"]


# ----- 11: one maintenance pass purges ------------------------------------------------------
async def test_one_maintenance_pass_purges_a_forget_older_than_the_window(
        tmp_path: Path) -> None:
    """As an owner does it: forget, stop, wait past the window, run `maintain` once."""
    emb = HashingEmbedder()
    mem = await open_memory(tmp_path, emb)
    marker = "markerf00d1e5"
    await mem.remember("p", "A kept fact", op=Operation.of("o1", "remember", {"t": 1}, None))
    await mem.remember("p", f"Secret {marker}", op=Operation.of("o2", "remember", {"t": 2}, None))
    await mem.forget("p", 2, op=Operation.of("o3", "forget", {"t": 3}, None))
    await mem.close()
    time.sleep(1.5)  # past the window: no version younger than the forget is needed
    fresh = await open_memory(tmp_path, emb)
    try:
        await fresh.maintain(retention=timedelta(seconds=1))
    finally:
        await fresh.close()
    assert files_with(tmp_path, marker) == []


# ----- the default data directory is relative ------------------------------------------------
async def test_maintenance_of_a_relative_store_sweeps_without_warnings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    emb = HashingEmbedder()
    mem = await open_memory(Path("semmem-data"), emb)
    mem.store.orphan_age = timedelta(0)
    try:
        await mem.remember("p", "A fact")
        table = next(Path("semmem-data").glob("p_*.lance"))
        orphan = table / "data" / "orphan.lance"
        orphan.write_bytes(b"left by a killed writer")
        os.utime(orphan, (time.time() - 60, time.time() - 60))
        with caplog.at_level(logging.INFO):
            reports = await mem.maintain()
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert sum(r.orphans_removed for r in reports) == 1
        assert not orphan.exists()
    finally:
        await mem.close()


# ----- write-time hints: the facts a write probably restates or supersedes -------------------
RESTATED = [("Prefers metric units", "Likes to use the metric system for measurements"),
            ("Is allergic to peanuts", "Has a peanut allergy"),
            ("Lives in Lyon", "Moved from Lyon to Paris in March"),
            ("Drives a blue Toyota", "Sold the Toyota and now cycles to work")]
UNRELATED = ["Sister's birthday is on 3 May", "Plays the cello in an amateur orchestra",
             "Keeps the router password in the blue notebook"]


@pytest.mark.model
async def test_remember_lists_the_fact_it_restates_with_the_real_model(
        tmp_path: Path, real_embedder: Any) -> None:
    memory = await open_memory(tmp_path / "db", real_embedder)
    for text in UNRELATED:
        assert "similar" not in await memory.remember("p", text)
    for old, new in RESTATED:
        first = await memory.remember("p", old)
        again = await memory.remember("p", new)
        assert again["similar"][0]["n"] == first["n"], (new, again)
        assert again["similar"][0]["text"] == old
        assert [s["n"] for s in again["similar"]] == [first["n"]]  # nothing unrelated listed
        assert 0 < again["similar"][0]["score"] <= 1
    await memory.close()


async def test_hints_leave_out_hidden_and_forgotten_facts(memory: Memory) -> None:
    await memory.remember("p", "Alice drinks green tea")
    await memory.remember("p", "Alice drinks green tea daily")
    await memory.remember("p", "Alice drinks green tea at noon")
    await memory.update("p", 1, attrs={"status": "inactive"})
    await memory.forget("p", 2)
    done = await memory.remember("p", "Alice drinks green tea every morning")
    assert [s["n"] for s in done["similar"]] == [3]


async def test_hints_past_the_index_threshold_leave_out_hidden_expired_and_forgotten_facts(
        tmp_path: Path) -> None:
    """An indexed partition's hints come from an index search that reads no texts: the same
    facts as below the threshold, with their texts (read by number at the decided version)."""
    from semmem.store import Store

    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=50)
    await store.open()
    memory = Memory(store, embedder)
    await memory.import_("p", [{"text": f"base {i} {i * 7}"} for i in range(80)])
    await memory.maintain("p")
    first = await memory.remember("p", "Alice drinks green tea")
    for text in ("Alice drinks green tea daily", "Alice drinks green tea at noon",
                 "Alice drinks green tea at dawn"):
        await memory.remember("p", text)
    await memory.update("p", first["n"], attrs={"status": "inactive"})
    await memory.forget("p", first["n"] + 1)
    await memory.update("p", first["n"] + 3, attrs={"expiresAt": "2000-01-01T00:00:00Z"})
    assert (await store.read_view("p")).indexed
    done = await memory.remember("p", "Alice drinks green tea every morning")
    assert done["similar"] == [{"n": first["n"] + 2, "text": "Alice drinks green tea at noon",
                                "score": done["similar"][0]["score"]}]
    await memory.close()


async def test_hints_never_cross_partitions(memory: Memory) -> None:
    await memory.remember("other", "Alice drinks green tea")
    assert "similar" not in await memory.remember("p", "Alice drinks green tea daily")


async def test_an_update_is_not_its_own_hint(memory: Memory) -> None:
    await memory.remember("p", "Alice drinks green tea")
    await memory.remember("p", "Bob cycles to work")
    done = await memory.update("p", 1, "Alice drinks green tea daily")
    assert "similar" not in done
    same = await memory.update("p", 2, "Alice drinks green tea")  # update does not deduplicate
    assert same["similar"] == [{"n": 1, "text": "Alice drinks green tea daily",
                                "score": same["similar"][0]["score"]}]


async def test_a_replayed_write_answers_the_same_hints(memory: Memory) -> None:
    await memory.remember("p", "Alice drinks green tea")
    await memory.remember("p", "Alice drinks green tea at noon")
    op = Operation.of("op-1", "remember", {"text": "Alice drinks green tea daily"}, None)
    first = await memory.remember("p", "Alice drinks green tea daily", op=op)
    assert [s["n"] for s in first["similar"]] == [1, 2]
    await memory.remember("p", "Bob cycles to work")  # other writes change nothing
    assert await memory.remember("p", "Alice drinks green tea daily", op=op) == first


async def test_a_replay_never_brings_back_a_forgotten_hint(tmp_path: Path) -> None:
    """Records name hinted facts without their text: forgetting one leaves no copy of it in
    any file, and a replay lists only the hints still as they were."""
    memory = await open_memory(tmp_path / "db", HashingEmbedder())
    secret = f"Alice drinks green tea {os.urandom(6).hex()}"
    await memory.remember("p", secret)
    await memory.remember("p", "Alice drinks green tea at noon")
    op = Operation.of("op-1", "remember", {"text": "Alice drinks green tea daily"}, None)
    first = await memory.remember("p", "Alice drinks green tea daily", op=op)
    assert {s["text"] for s in first["similar"]} == {secret, "Alice drinks green tea at noon"}
    await memory.forget("p", 1)
    again = await memory.remember("p", "Alice drinks green tea daily", op=op)
    assert again == {**first, "similar": [s for s in first["similar"] if s["n"] != 1]}
    await memory.maintain("p", retention=timedelta(0))
    assert files_with(tmp_path / "db", secret.split()[-1].encode()) == []
    await memory.close()


async def test_exact_duplicates_answer_existing_without_hints(memory: Memory) -> None:
    await memory.remember("p", "Alice drinks green tea")
    await memory.remember("p", "Alice drinks green tea daily")
    assert await memory.remember("p", "alice drinks  green tea") == {
        "status": "stored", "n": 1, "count": 2, "existing": True}


async def test_a_replay_finds_its_hints_beyond_the_fresh_candidates(memory: Memory) -> None:
    """A replay's hinted facts are looked up even when newer look-alikes push them out of the
    write's own nearest candidates (another replica's view, or a partition grown since)."""
    await memory.remember("p", "Alice drinks green tea")
    op = Operation.of("op-1", "remember", {"text": "Alice drinks green tea daily"}, None)
    first = await memory.remember("p", "Alice drinks green tea daily", op=op)
    assert [s["n"] for s in first["similar"]] == [1]
    for i in range(8):
        await memory.remember("p", f"Alice drinks green tea daily at {i}")
    assert await memory.remember("p", "Alice drinks green tea daily", op=op) == first
