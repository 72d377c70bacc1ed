"""The memory core: numbering, duplicates, edits, cursors, idempotency, recall, search."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from semmem.contract import make_cursor, parse_cursor
from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import (
    Conflict,
    DeadlineExceeded,
    IdempotencyMismatch,
    InvalidArguments,
    InvalidInput,
    NotFound,
)
from semmem.items import now_ms
from semmem.memory import Memory, Operation, QuietObserver
from semmem.store import Store
from tests.support.memory import open_memory


async def test_remember_numbers_from_one(memory: Memory) -> None:
    assert await memory.remember("p", "Prefers metric units") == {
        "status": "stored", "n": 1, "count": 1}
    assert await memory.remember("p", "Lives in Berlin") == {"status": "stored", "n": 2, "count": 2}


async def test_remember_duplicate_returns_existing_number(memory: Memory) -> None:
    await memory.remember("p", "Prefers metric units")
    await memory.remember("p", "Lives in Berlin")
    again = await memory.remember("p", "  prefers\n METRIC   units ")
    assert again == {"status": "stored", "n": 1, "count": 2, "existing": True}
    assert [it.n for it in await memory.list("p")] == [1, 2]


async def test_forget_newest_does_not_free_its_number(memory: Memory) -> None:
    for text in ("a fact", "b fact", "c fact"):
        await memory.remember("p", text)
    assert await memory.forget("p", 3) == {
        "status": "stored", "n": 3, "count": 2, "forgotten": True}
    assert (await memory.remember("p", "d fact"))["n"] == 4
    assert [it.n for it in await memory.list("p")] == [1, 2, 4]


async def test_numbers_survive_reopen(memory: Memory, fake_embedder: object) -> None:
    from tests.support.memory import open_memory

    await memory.remember("p", "one")
    await memory.remember("p", "two")
    await memory.forget("p", 2)
    again = await open_memory(__import__("pathlib").Path(memory.uri), fake_embedder)
    assert (await again.remember("p", "three"))["n"] == 3


async def test_update_keeps_number_and_bumps_revision(memory: Memory) -> None:
    await memory.remember("p", "Prefers metric units")
    assert await memory.update("p", 1, "Prefers SI units") == {
        "status": "stored", "n": 1, "count": 1}
    (item,) = await memory.list("p")
    assert (item.n, item.text, item.revision) == (1, "Prefers SI units", 2)
    assert item.updated >= item.ts


@pytest.mark.parametrize("n", [0, -1, 99])
async def test_update_unknown_number_is_not_found_or_invalid(memory: Memory, n: int) -> None:
    await memory.remember("p", "x")
    with pytest.raises((NotFound, InvalidArguments)):
        await memory.update("p", n, "y")


async def test_forget_twice_is_not_found(memory: Memory) -> None:
    """A forgotten number answers as one never given (issue 59: nothing tells them apart)."""
    await memory.remember("p", "x")
    await memory.forget("p", 1)
    with pytest.raises(NotFound, match=r"^item 1 does not exist in this memory$"):
        await memory.forget("p", 1)
    with pytest.raises(NotFound, match=r"^item 2 does not exist in this memory$"):
        await memory.forget("p", 2)


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "x" * 2001, 5, None])
async def test_remember_bad_text_is_refused(memory: Memory, text: object) -> None:
    with pytest.raises(InvalidArguments):
        await memory.remember("p", text)  # type: ignore[arg-type]
    assert await memory.list("p") == []


async def test_remember_text_is_trimmed_and_kept_exactly(memory: Memory) -> None:
    await memory.remember("p", "  Likes  café ☕ and 日本語 \n")
    (item,) = await memory.list("p")
    assert item.text == "Likes  café ☕ and 日本語"


async def test_update_after_cursor_change_conflicts(memory: Memory) -> None:
    await memory.remember("p", "alpha one")
    await memory.remember("p", "beta two")
    cursor = (await memory.recall("p", None, 1000)).cursor
    await memory.update("p", 1, "alpha changed")
    with pytest.raises(Conflict):
        await memory.update("p", 1, "alpha again", cursor=cursor)
    with pytest.raises(Conflict):
        await memory.forget("p", 1, cursor=cursor)
    # another item's edit does not conflict
    assert (await memory.update("p", 2, "beta changed", cursor=cursor))["n"] == 2


async def test_two_edits_under_one_cursor_both_apply(memory: Memory) -> None:
    for text in ("one x", "two y", "three z"):
        await memory.remember("p", text)
    cursor = (await memory.recall("p", None, 1000)).cursor
    await memory.update("p", 1, "one changed", cursor=cursor)
    await memory.forget("p", 3, cursor=cursor)
    assert [(it.n, it.text) for it in await memory.list("p")] == [
        (1, "one changed"), (2, "two y")]


async def test_cursor_of_other_partition_is_invalid(memory: Memory) -> None:
    await memory.remember("p", "x")
    await memory.remember("q", "x")
    cursor = (await memory.recall("q", None, 100)).cursor
    with pytest.raises(InvalidInput):
        await memory.update("p", 1, "y", cursor=cursor)
    with pytest.raises(InvalidInput):
        parse_cursor("p", "garbage")


async def test_idempotent_retry_replays_without_second_write(memory: Memory) -> None:
    op = Operation.of("op-1", "remember", {"text": "fact"}, None)
    first = await memory.remember("p", "fact", op=op)
    await memory.remember("p", "other")
    second = await memory.remember("p", "fact", op=op)
    assert first == second == {"status": "stored", "n": 1, "count": 1}
    assert [it.n for it in await memory.list("p")] == [1, 2]


async def test_idempotent_retry_of_forget_replays(memory: Memory) -> None:
    await memory.remember("p", "fact")
    op = Operation.of("op-f", "forget", {"n": 1}, None)
    assert (await memory.forget("p", 1, op=op))["forgotten"] is True
    assert (await memory.forget("p", 1, op=op))["forgotten"] is True  # not a 404


async def test_same_operation_id_other_arguments_mismatch(memory: Memory) -> None:
    await memory.remember("p", "fact", op=Operation.of("op-1", "remember", {"text": "fact"}, None))
    with pytest.raises(IdempotencyMismatch):
        await memory.remember(
            "p", "other", op=Operation.of("op-1", "remember", {"text": "other"}, None))
    assert [it.text for it in await memory.list("p")] == ["fact"]


async def test_operation_ids_are_per_partition(memory: Memory) -> None:
    op = Operation.of("op-1", "remember", {"text": "fact"}, None)
    await memory.remember("p", "fact", op=op)
    assert (await memory.remember("q", "fact", op=op))["n"] == 1
    assert len(await memory.list("q")) == 1


async def test_write_after_deadline_is_not_committed(memory: Memory) -> None:
    op = Operation("op-late", "fp", deadline_ms=now_ms() - 1)
    with pytest.raises(DeadlineExceeded):
        await memory.remember("p", "late fact", op=op)
    assert await memory.list("p") == []


async def test_recall_empty_partition(memory: Memory) -> None:
    result = await memory.recall("nobody", "anything", 1024)
    assert (result.text, result.sources) == ("", [])


@pytest.mark.parametrize("max_bytes", [0, 16_385, -3, True])
async def test_recall_bad_budget_is_refused(memory: Memory, max_bytes: int) -> None:
    with pytest.raises(InvalidInput):
        await memory.recall("p", "x", max_bytes)


async def test_recall_blank_input_gives_newest_first(memory: Memory) -> None:
    for text in ("first", "second", "third"):
        await memory.remember("p", text)
    await memory.update("p", 1, "first, edited")
    result = await memory.recall("p", "  ", 1000)
    assert result.text == "1. first, edited\n3. third\n2. second"
    assert [s["id"] for s in result.sources] == ["1", "3", "2"]
    assert result.sources[0]["revision"] == "2"
    assert result.sources[0]["updatedAt"].endswith("Z")


async def test_recall_renders_newlines_as_spaces(memory: Memory) -> None:
    await memory.remember("p", "line one\nline two")
    assert (await memory.recall("p", None, 100)).text == "1. line one line two"


async def test_recall_has_no_side_effects(memory: Memory) -> None:
    await memory.remember("p", "fact one")
    before = (await memory.stats("p"))["version"]
    await memory.recall("p", "fact", 100)
    await memory.recall("p", None, 100)
    assert (await memory.stats("p"))["version"] == before


async def test_recall_skips_unsurfaced_items(memory: Memory) -> None:
    await memory.remember("p", "knee injury in 2020", attrs={"status": "inactive"})
    await memory.remember("p", "knee surgery planned", attrs={"surfacing": "hold"})
    await memory.remember("p", "knee pain", attrs={"mergedInto": 4})
    await memory.remember("p", "knee is fine now", attrs={"status": "active"})
    result = await memory.recall("p", "knee", 1000)
    assert result.text == "4. knee is fine now"
    assert [s["id"] for s in (await memory.recall("p", None, 1000)).sources] == ["4"]


async def test_search_returns_scores_and_count(memory: Memory) -> None:
    await memory.remember("p", "Prefers metric units")
    await memory.remember("p", "Has a dog named Rex")
    result = await memory.search("p", "metric units", limit=1)
    assert result["count"] == 2
    assert [it["n"] for it in result["items"]] == [1]
    assert set(result["items"][0]) == {"n", "text", "score", "updatedAt"}


@pytest.mark.parametrize("limit", [0, 51, True])
async def test_search_bad_limit_is_refused(memory: Memory, limit: int) -> None:
    with pytest.raises(InvalidArguments):
        await memory.search("p", "x", limit)


async def test_export_import_round_trip(memory: Memory) -> None:
    for text in ("alpha", "beta", "gamma", "delta"):
        await memory.remember("p", text)
    await memory.forget("p", 2)
    await memory.update("p", 3, "gamma two", attrs={"note": "edited"})
    exported = [rec async for rec in memory.export("p")]
    report = await memory.import_("copy", exported, batch_size=2)
    assert (report.imported, report.duplicates) == (3, 0)
    assert [rec async for rec in memory.export("copy")] == exported
    again = await memory.import_("copy", exported)
    assert (again.imported, again.duplicates) == (0, 3)


async def test_import_assigns_numbers_after_highest(memory: Memory) -> None:
    await memory.remember("p", "existing")
    report = await memory.import_("p", [{"text": "new one"}, {"text": "new two", "n": 1}])
    assert report.imported == 2
    assert [(it.n, it.text) for it in await memory.list("p")] == [
        (1, "existing"), (2, "new one"), (3, "new two")]


async def test_delete_partition_removes_everything(memory: Memory) -> None:
    await memory.remember("p", "x")
    await memory.remember("q", "y")
    assert await memory.delete_partition("p") is True
    assert await memory.list("p") == []
    assert await memory.partitions() == ["q"]
    assert await memory.delete_partition("p") is False


# ----- partitions past the index threshold (read through the vector index) -------------------
async def _indexed(tmp_path: Path, count: int = 120) -> Memory:
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=50)
    await store.open()
    memory = Memory(store, embedder, index_candidates=40)
    await memory.import_("p", [{"text": f"fact {i} about topic{i % 7} and word{i}"}
                               for i in range(count)])
    return memory


async def test_maintain_builds_the_index_only_past_the_threshold(tmp_path: Path) -> None:
    memory = await _indexed(tmp_path, count=40)
    report = await memory.store.maintain("p")
    assert report is not None and report.indexed == ""
    assert not (await memory.store.read_view("p")).indexed
    await memory.import_("p", [{"text": f"more {i}"} for i in range(20)])
    report = await memory.store.maintain("p")
    assert report is not None and report.indexed == "built"
    view = await memory.store.read_view("p")
    assert view.indexed and view.count == 60 and view.items == []
    report = await memory.store.maintain("p")
    assert report is not None and report.indexed == ""  # no unindexed vector: nothing to fold
    await memory.remember("p", "one more fact with a vector")
    report = await memory.store.maintain("p", purge=False)
    assert report is not None and report.indexed == "updated"


async def test_recall_indexed_partition_finds_relevant_and_unindexed_rows(
    tmp_path: Path,
) -> None:
    memory = await _indexed(tmp_path)
    await memory.maintain("p")
    result = await memory.recall("p", "word42 topic0", 200)
    assert result.text.split("\n")[0] == "43. fact 42 about topic0 and word42"
    assert result.cursor == make_cursor("p", (await memory.snapshot("p")).seq)
    added = await memory.remember("p", "zebra quartz xylophone")  # after the index was built
    assert added == {"status": "stored", "n": 121, "count": 121}
    assert (await memory.recall("p", "zebra quartz xylophone", 200)).text.startswith(
        "121. zebra quartz xylophone")
    await memory.update("p", 43, "kiwi mango papaya")
    assert "43. kiwi mango papaya" in (await memory.recall("p", "kiwi mango papaya", 300)).text
    assert "word42" not in (await memory.recall("p", "word42 topic0", 300)).text
    await memory.forget("p", 121)
    assert "zebra" not in (await memory.recall("p", "zebra quartz xylophone", 300)).text
    found = await memory.search("p", "word7 topic0", 3)
    assert found["count"] == 120 and found["items"][0]["n"] == 8
    newest = await memory.recall("p", None, 200)
    assert newest.text.split("\n")[0] == "43. kiwi mango papaya"  # most recently updated
    again = await memory.remember("p", "FACT 5 about topic5   and word5")
    assert again == {"status": "stored", "n": 6, "count": 120, "existing": True}


@pytest.mark.parametrize(("max_bytes", "ranked"), [(200, 50), (2_400, 60), (8_192, 100)])
async def test_an_indexed_recall_ranks_as_many_candidates_as_its_budget_can_use(
        tmp_path: Path, spans: Any, max_bytes: int, ranked: int) -> None:
    """One candidate per 40 bytes of the budget, at least 50, at most ``index_candidates``
    (the spans say how many the index search returned and ranking saw); the best fact is
    found at each."""
    from semmem.memory import recall_candidates

    assert recall_candidates(max_bytes, 100) == ranked
    memory = await _indexed(tmp_path, count=240)
    memory.index_candidates = 100
    await memory.maintain("p")
    assert (await memory.store.read_view("p")).indexed
    result = await memory.recall("p", "word42 topic0", max_bytes)
    assert result.text.split("\n")[0] == "43. fact 42 about topic0 and word42"
    done = {s.name: dict(s.attributes or {}) for s in spans.get_finished_spans()}
    assert done["semmem.candidates"]["semmem.candidates.count"] == ranked  # the index's
    assert done["semmem.rank"]["semmem.rank.candidates"] == ranked


async def test_snapshot_cache_is_bounded_by_items(tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  cache_items=100)
    await store.open()
    memory = Memory(store, embedder)
    for p in ("a", "b", "c"):
        await memory.import_(p, [{"text": f"{p} fact {i}"} for i in range(60)])
        assert len((await memory.recall(p, f"{p} fact 1", 100)).sources) >= 1
    stats = store.cache_stats()
    assert stats["items"] <= 100 and stats["snapshots"] == 1
    assert (await memory.recall("a", "a fact 7", 100)).text.startswith("8. a fact 7")


async def test_concurrent_recalls_share_model_calls(tmp_path: Path) -> None:
    import threading

    class Counting(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.batches: list[int] = []
            self.gate = threading.Event()

        def embed_batch(self, texts: list[str]):  # type: ignore[no-untyped-def]
            self.gate.wait(5)  # holds the model until the test lets it go
            self.batches.append(len(texts))
            return super().embed_batch(texts)

    embedder = Counting()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id)
    await store.open()
    memory = Memory(store, embedder)
    embedder.gate.set()
    await memory.import_("p", [{"text": f"fact {i} about topic{i}"} for i in range(20)])
    embedder.gate.clear()
    embedder.batches.clear()
    queries = [f"topic{i} fact {i}" for i in range(8)]
    pending = asyncio.gather(*(memory.recall("p", q, 200) for q in queries))
    await asyncio.sleep(0.2)
    embedder.gate.set()
    results = await pending
    assert [r.text.split("\n")[0] for r in results] == [
        f"{i + 1}. fact {i} about topic{i}" for i in range(8)]
    assert embedder.batches == [8]  # all eight queued before the model was free: one call


def test_memory_recalls_from_successive_event_loops(tmp_path: Path) -> None:
    async def build() -> Memory:
        embedder = HashingEmbedder()
        store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id)
        await store.open()
        memory = Memory(store, embedder)
        await memory.remember("p", "Alice likes green tea")
        return memory

    memory = asyncio.run(build())
    for _ in range(2):  # each asyncio.run is a new loop; the batcher must not wait on the old
        result = asyncio.run(asyncio.wait_for(memory.recall("p", "green tea", 100), 10))
        assert result.text == "1. Alice likes green tea"


async def test_update_reports_replaced_text_as_dropped(memory: Memory) -> None:
    """A text update tells the write hook a text left (so every surface purges it); an edit
    that only adds a record field drops nothing."""
    calls: list[tuple[str, bool]] = []
    memory.observer = Recorder(calls)
    await memory.remember("p", "old text")
    await memory.update("p", 1, "new text")
    await memory.update("p", 1, attrs={"note": "n"})
    assert calls == [("p", False), ("p", True), ("p", False)]


@pytest.mark.parametrize("edit", [
    {"attrs": {"note": "another note"}}, {"attrs": {"note": None}},
    {"metadata": {"ssn": "redacted"}}, {"metadata": {}}, {"attrs": {"metadata": None}},
    {"attrs": {"status": None}}, {"attrs": {"expiresAt": "2099-01-01T00:00:00Z"}},
])
async def test_an_edit_replacing_or_clearing_a_record_field_reports_a_dropped_value(
        memory: Memory, edit: dict[str, Any]) -> None:
    """A replaced or cleared note, metadata object, status or expiry is a dropped value,
    purged as a replaced text is (before: only a text change was reported)."""
    calls: list[tuple[str, bool]] = []
    await memory.remember("p", "a fact with fields", metadata={"ssn": "078-05-1120"},
                          attrs={"note": "a note", "status": "active"},
                          expires_at="2098-01-01T00:00:00Z")
    memory.observer = Recorder(calls)
    await memory.update("p", 1, **edit)
    assert calls == [("p", True)]


async def test_a_metadata_edit_without_maintenance_asks_the_servers_to_purge(
        memory: Memory) -> None:
    """A process without maintenance (the CLI, a library user) that clears metadata leaves a
    purge request in the store, as it does for a replaced text (before: none)."""
    await memory.remember("p", "a fact with a pin", metadata={"pin": "7730"})
    await memory.update("p", 1, attrs={"note": "added only"})
    assert await memory.store.purge_requests() == {}  # an added field drops nothing
    await memory.update("p", 1, metadata={})
    assert set(await memory.store.purge_requests()) == {"p"}


async def test_write_hook_skips_replays_and_duplicates(memory: Memory) -> None:
    """Only attempted commits reach the write hook: a replayed operation and a duplicate
    remember change nothing, so they schedule no maintenance (a replayed forget does: its
    purge is idempotent and the original's may be lost)."""
    from semmem.memory import Operation

    calls: list[tuple[str, bool]] = []
    memory.observer = Recorder(calls)
    op = Operation.of("op-1", "remember", {"text": "tea"}, None)
    first = await memory.remember("p", "tea", op=op)
    assert await memory.remember("p", "tea", op=op) == first  # replay
    await memory.remember("p", "Tea ")  # duplicate of item 1
    assert calls == [("p", False)]
    forget = Operation.of("op-2", "forget", {"n": 1}, None)
    await memory.forget("p", 1, op=forget)
    await memory.forget("p", 1, op=forget)  # replay
    assert calls == [("p", False), ("p", True), ("p", True)]


class Recorder(QuietObserver):
    """A write observer that records what it is told."""

    def __init__(self, calls: list[tuple[str, bool]]) -> None:
        self.calls = calls

    def written(self, partition: str, dropped: bool) -> None:
        self.calls.append((partition, dropped))


async def test_merge_into_missing_item_is_refused(memory: Memory) -> None:
    await memory.remember("p", "alpha fact")
    with pytest.raises(InvalidArguments):
        await memory.merge("p", 1, 7)
    with pytest.raises(InvalidArguments):
        await memory.merge("p", 1, 1)
    assert (await memory.list("p"))[0].attrs == {}


async def test_merge_races_a_forget_of_its_target_atomically(
        tmp_path: Path, fake_embedder: HashingEmbedder) -> None:
    """A merge checks its target in the same write that marks the item: a forget of the target
    by another store on the same directory either lands first (the merge is refused) or after
    (the merge stands) — never a merged item pointing at a forgotten one."""
    mine = await open_memory(tmp_path / "db", fake_embedder)
    other = await open_memory(tmp_path / "db", fake_embedder)
    outcomes = set()
    for round_ in range(12):
        p = f"p{round_}"
        await mine.remember(p, "the item")
        await mine.remember(p, "the target")
        merged, forgot = await asyncio.gather(
            mine.merge(p, 1, 2), other.forget(p, 2), return_exceptions=True)
        assert not isinstance(forgot, BaseException)
        outcomes.add("refused" if isinstance(merged, InvalidArguments) else "merged")
        if isinstance(merged, BaseException) and not isinstance(merged, InvalidArguments):
            raise merged
        snap = await mine.snapshot(p)
        item, target = snap.get(1), snap.tombstones[2]
        assert item is not None
        if isinstance(merged, BaseException):
            assert "mergedInto" not in item.attrs
        else:  # the merge committed while its target was live
            assert item.attrs["mergedInto"] == 2 and item.seq < target.seq
    assert outcomes
    await other.close()
    await mine.close()


async def test_no_write_makes_a_partition_past_the_key_bound(memory: Memory) -> None:
    """The store makes every new partition in one place, and refuses a key past 1,024 bytes
    there, whichever surface (CLI, import, console, admin) the write came from."""
    for write in (lambda: memory.remember("k" * 1025, "a fact"),
                  lambda: memory.import_("é" * 513, [{"text": "a fact"}])):
        with pytest.raises(InvalidInput, match="at most 1024 UTF-8 bytes"):
            await write()
    assert await memory.partitions() == []
    assert (await memory.remember("k" * 1024, "a fact"))["n"] == 1  # the bound itself is a key
