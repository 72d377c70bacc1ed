"""Filtered reads across versions: what a filtered read keeps per version (a snapshot's
``Columns``, an indexed view's ``Counts``) is carried forward by this process's writes and
stays a brute-force filter over the export after every remember, update, forget, delete by
filter, another replica's write, and a partition deleted and written again."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import iso, parse_iso
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.scoped.filtered import COUNTS, Columns, Counts
from semmem.store import Store
from semmem.store.views import IndexedView, PartitionSnapshot
from tests.support.filters import brute
from tests.support.memory import open_memory, small_indexed_memory

DAY = 86_400_000
T0 = parse_iso("2026-01-01T00:00:00Z")
USERS = ["alice", "bob", "carol"]
FILTERS: list[dict[str, Any]] = [
    {"metadata": {"user": "alice"}},
    {"metadata": {"user": "bob", "run": 1}},
    {"metadata": {"flag": True}},  # true is no number: never the facts with flag 1
    {"metadata": {"run": 1}},
    {"updated": {"lte": iso(T0 + 5 * DAY)}},  # an edit moves a fact out
    {"metadata": {"user": "carol"}, "ts": {"gte": iso(T0 + 3 * DAY)}},
]

meta_values = st.fixed_dictionaries({}, optional={
    "user": st.sampled_from(USERS),
    "run": st.sampled_from([1, 2, 1.0]),
    "flag": st.sampled_from([True, False, 1]),
})
ops = st.lists(st.one_of(
    st.tuples(st.just("remember"), meta_values),
    st.tuples(st.just("update"), st.integers(0, 99), meta_values),  # text and metadata
    st.tuples(st.just("text"), st.integers(0, 99)),  # text only: the metadata stays
    st.tuples(st.just("forget"), st.integers(0, 99)),
    st.tuples(st.just("forget_matching"), st.sampled_from(USERS)),
    st.tuples(st.just("other"), meta_values),  # another replica remembers
), min_size=1, max_size=8)


async def _agree(memory: Memory, oracle: Memory) -> None:
    """Every filter's search is the brute-force filter over the export (``oracle``'s: an
    export reads the whole partition, which would leave ``memory`` holding its snapshot)."""
    exported = [rec async for rec in oracle.export("p")]
    for raw in FILTERS:
        want = brute(exported, raw)
        got = await memory.search("p", "fact about topic", 50, filter=Filter.parse(raw))
        assert got["count"] == len(want), raw
        if len(want) <= 50:
            assert {e["n"] for e in got["items"]} == want, raw


def _columns(snap: PartitionSnapshot) -> tuple[Any, ...]:
    cols = snap.derived["filter:columns"]
    assert isinstance(cols, Columns)
    return ({k: v.tolist() for k, v in cols.pairs.items() if len(v)}, cols.numbers.tolist(),
            cols.updated.tolist(), cols.ts.tolist())


async def _carried(memory: Memory) -> None:
    """What the last search kept was carried to this version, and is what a fresh build or
    count gives (checked before any read of the version builds or counts it)."""
    view = await memory.store.read_view("p")
    if isinstance(view, PartitionSnapshot):
        assert "filter:columns" in view.derived  # evolved, not built by a read
        carried = _columns(view)
        fresh = PartitionSnapshot(list(view.items), view.vectors, view.head)
        fresh.cached("filter:columns", Columns.of)
        assert carried == _columns(fresh)
        return
    from semmem.store.reads.filtered import count_where

    assert isinstance(view, IndexedView)
    counts = view.derived.get(COUNTS)
    assert isinstance(counts, Counts)
    for raw in FILTERS:
        where = Filter.parse(raw).where()
        kept = counts.get(where)
        assert kept is not None, raw
        assert (kept, True) == await count_where(memory.store, view, where), raw


async def _run(memory: Memory, other: Memory, oracle: Memory, steps: list[Any]) -> None:
    await _agree(memory, oracle)
    for i, step in enumerate(steps):
        live = [it.n for it in await oracle.list("p")]
        kind = step[0]
        if kind == "remember":
            await memory.remember("p", f"new fact {i} about topic", metadata=step[1] or None)
        elif kind == "other":
            await other.remember("p", f"other fact {i} about topic", metadata=step[1] or None)
        elif kind == "forget_matching":
            await memory.forget_matching("p", Filter.parse({"metadata": {"user": step[1]}}))
        elif live and kind == "update":
            await memory.update("p", live[step[1] % len(live)], f"edited fact {i} about topic",
                                metadata=step[2])
        elif live and kind == "text":
            await memory.update("p", live[step[1] % len(live)], f"retold fact {i} about topic")
        elif live and kind == "forget":
            await memory.forget("p", live[step[1] % len(live)])
        if kind != "other":  # this process's write: carried, not built again
            await _carried(memory)
        await _agree(memory, oracle)


def _facts(count: int) -> list[dict[str, Any]]:
    return [{"text": f"fact {i} about topic{i % 7}",
             "metadata": {"user": USERS[i % 3], "run": i % 2, "flag": [True, 1][i % 2]},
             "ts": iso(T0 + (i % 10) * DAY), "updated": iso(T0 + (i % 10) * DAY)}
            for i in range(count)]


@settings(max_examples=25, deadline=None)
@given(ops)
def test_a_snapshots_filter_columns_are_carried_through_writes(steps: list[Any]) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            memory, other, oracle = [await open_memory(Path(tmp), HashingEmbedder())
                                     for _ in range(3)]
            try:
                await memory.import_("p", _facts(30))
                await _run(memory, other, oracle, steps)
            finally:
                for m in (oracle, other, memory):
                    await m.close()

    asyncio.run(run())


@settings(max_examples=12, deadline=None)
@given(ops)
def test_an_indexed_views_filter_counts_are_carried_through_writes(steps: list[Any]) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            memory, other, oracle = [await small_indexed_memory(Path(tmp)) for _ in range(3)]
            try:
                await memory.import_("p", _facts(60))
                await memory.maintain("p")
                assert (await memory.store.read_view("p")).indexed
                await _run(memory, other, oracle, steps)
            finally:
                for m in (oracle, other, memory):
                    await m.close()

    asyncio.run(run())


async def test_a_write_decided_on_another_replicas_version_is_counted_again(
        tmp_path: Path) -> None:
    # the counts held are of a version before the other replica's: carrying them by this
    # write's changes alone would miss the other's fact
    a = await small_indexed_memory(tmp_path / "db")
    b = await small_indexed_memory(tmp_path / "db")
    alice = Filter.parse({"metadata": {"user": "alice"}})
    try:
        await a.import_("p", _facts(60))
        await a.maintain("p")
        assert (await a.search("p", "topic", 5, filter=alice))["count"] == 20
        await b.remember("p", "a fact from the other replica", metadata={"user": "alice"})
        await a.remember("p", "a fact from this replica", metadata={"user": "alice"})
        assert (await a.search("p", "topic", 5, filter=alice))["count"] == 22
        await a.remember("p", "and one more", metadata={"user": "alice"})  # carried from there
        assert (await a.search("p", "topic", 5, filter=alice))["count"] == 23
    finally:
        await b.close()
        await a.close()


async def _rewritten(reader: Memory, writer: Memory, tmp_path: Path) -> None:
    """``reader`` counts each filter on a partition of alice's facts, ``writer`` deletes it
    and writes the same number of bob's facts in one import: the same head (a deletion is
    a version of the table now, so not the same version); the counts must be the new
    partition's."""
    alice = Filter.parse({"metadata": {"user": "alice"}})
    bob = Filter.parse({"metadata": {"user": "bob"}})
    for who in ("alice", "bob"):
        await writer.import_("p", [{"text": f"fact {i} about topic{i % 7}",
                                    "metadata": {"user": who}} for i in range(60)])
        view = await reader.store.read_view("p")
        assert view.indexed and (view.version == 2 if who == "alice" else view.version > 2)
        counted = [(await reader.search("p", "fact about topic3", 50, filter=f))["count"]
                   for f in (alice, bob)]
        assert counted == ([60, 0] if who == "alice" else [0, 60])
        if who == "alice":
            await writer.delete_partition("p")
    found = await reader.search("p", "fact about topic3", 50, filter=bob)
    assert len(found["items"]) == 50 and found["items"][0]["metadata"] == {"user": "bob"}


async def test_a_partition_deleted_and_written_again_to_the_same_version_is_counted_again(
        tmp_path: Path) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    try:
        await _rewritten(memory, memory, tmp_path)
    finally:
        await memory.close()


async def test_another_replicas_delete_and_rewrite_to_the_same_version_is_counted_again(
        tmp_path: Path) -> None:
    # the reader's view of version 2 is still the old table's (nothing it reads tells them
    # apart by number), but its counts are not answered from it
    reader = await small_indexed_memory(tmp_path / "db")
    writer = await small_indexed_memory(tmp_path / "db")
    try:
        await _rewritten(reader, writer, tmp_path)
    finally:
        await writer.close()
        await reader.close()


async def test_a_count_is_kept_per_view_and_not_read_again(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"), dim=64, model_id="hashing-64", index_threshold=50)
    await store.open()
    memory = Memory(store, HashingEmbedder(), index_candidates=40)
    try:
        await memory.import_("p", _facts(60))
        await memory.maintain("p")
        alice = Filter.parse({"metadata": {"user": "alice"}})
        await memory.search("p", "topic", 5, filter=alice)
        view = await store.read_view("p")
        counts = view.derived[COUNTS] if isinstance(view, IndexedView) else None
        assert isinstance(counts, Counts) and counts.get(alice.where()) == 20
    finally:
        await memory.close()
