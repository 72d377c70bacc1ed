"""The counts the head row carries (live items, and those with an expiry of their own) stay the
table's real counts through every kind of write, on both sides of the index threshold and from
two replicas; ``semmem check`` verifies them and repairs a wrong one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import lance
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import SemmemError
from semmem.items import EXPIRES
from semmem.lifecycle.retention import Retention
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.rows import HEAD_KEY, table_name
from semmem.store.schema import LIVE_ITEMS
from semmem.store.upkeep.check import check_partition, check_table
from semmem.store.views import IndexedView
from semmem.stored.items import StoreItems

WORDS = ["apple", "river", "stone", "cloud", "lamp", "violin", "orbit", "maple"]
LATER = "2099-01-01T00:00:00Z"


async def _memory(path: Path, **kw: Any) -> Memory:
    embedder = HashingEmbedder()
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id, **kw)
    await store.open()
    return Memory(store, embedder, index_candidates=20)


def _table(path: Path, partition: str = "p") -> Any:
    return lance.dataset(str(path / f"{table_name(partition)}.lance"))


def real_counts(path: Path, partition: str = "p") -> tuple[int, int]:
    """The live rows of the table's latest version, and those with an expiry, counted."""
    ds = _table(path, partition)
    attrs = ds.to_table(columns=["attrs"], filter=LIVE_ITEMS).column("attrs").to_pylist()
    return len(attrs), sum(1 for raw in attrs if raw and EXPIRES in json.loads(raw))


def carried(path: Path, partition: str = "p") -> tuple[int, int]:
    """The counts the head row of the table's latest version carries."""
    rows = _table(path, partition).to_table(columns=["attrs"], filter=f"key = '{HEAD_KEY}'")
    assert rows.num_rows == 1
    attrs = json.loads(rows.column("attrs")[0].as_py())
    return attrs["live"], attrs["expiring"]


_step = st.one_of(
    st.tuples(st.just("remember"), st.sampled_from(WORDS), st.booleans()),
    st.tuples(st.just("update"), st.integers(1, 24), st.sampled_from(WORDS)),
    st.tuples(st.just("expiry"), st.integers(1, 24), st.booleans()),
    st.tuples(st.just("merge"), st.integers(1, 24), st.integers(1, 24)),
    st.tuples(st.just("forget"), st.integers(1, 24)),
    st.tuples(st.just("import"), st.lists(st.tuples(st.sampled_from(WORDS),
                                                    st.one_of(st.none(), st.integers(1, 40)),
                                                    st.booleans()), min_size=1, max_size=6)),
)


async def _apply(memory: Memory, step: tuple[Any, ...], i: int) -> None:
    kind = step[0]
    if kind == "remember":
        _, word, expires = step
        await memory.remember("p", f"{word} fact {i % 7}",
                              expires_at=LATER if expires else None)
    elif kind == "update":
        await memory.update("p", step[1], f"{step[2]} edited {i}")
    elif kind == "expiry":
        await memory.update("p", step[1], attrs={EXPIRES: LATER if step[2] else None})
    elif kind == "merge":
        await memory.merge("p", step[1], step[2])
    elif kind == "forget":
        await memory.forget("p", step[1])
    else:
        records = [{"text": f"{w} imported {j % 3}", **({"n": n} if n else {}),
                    **({EXPIRES: LATER} if e else {})} for j, (w, n, e) in enumerate(step[1])]
        await memory.import_("p", records, batch_size=4)


async def _run(seed: int, steps: list[tuple[tuple[Any, ...], int]], path: Path) -> None:
    # Two replicas on one directory and a small threshold: seeded past it, the partition is
    # written through write views and read through its index; seeded below, through snapshots.
    replicas = [await _memory(path, index_threshold=12, write_loads=6),
                await _memory(path, index_threshold=12, write_loads=6)]
    try:
        if seed:
            await replicas[0].import_("p", [{"text": f"seed {i}"} for i in range(seed)])
        for i, (step, who) in enumerate(steps):
            # A refused step (a number never given, a merge into itself) commits nothing.
            with contextlib.suppress(SemmemError):
                await _apply(replicas[who], step, i)
            if not (path / f"{table_name('p')}.lance").exists():
                continue
            real = real_counts(path)
            assert carried(path) == real, (i, step)
            for memory in replicas:
                assert (await memory.store.read_view("p")).count == real[0], (i, step)
        if (path / f"{table_name('p')}.lance").exists():
            assert check_table(str(path / f"{table_name('p')}.lance")) == []
    finally:
        for memory in replicas:
            await memory.close()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([0, 4, 16]),
       st.lists(st.tuples(_step, st.integers(0, 1)), min_size=1, max_size=30))
def test_carried_counts_match_the_table_after_every_write(
        seed: int, steps: list[tuple[tuple[Any, ...], int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(seed, steps, Path(tmp)))


async def test_two_replicas_interleaving_past_the_threshold_keep_the_counts(
        tmp_path: Path) -> None:
    a = await _memory(tmp_path, index_threshold=20)
    b = await _memory(tmp_path, index_threshold=20)
    await a.import_("p", [{"text": f"seed fact {i}"} for i in range(30)])
    assert (await a.store.read_view("p")).indexed
    # B read a view once, then A moves on: B's next write decides on the latest version.
    assert (await b.store.read_view("p")).count == 30
    for i in range(6):
        await a.remember("p", f"from a {i}")
        await b.remember("p", f"from b {i}")
        await b.forget("p", 1 + i)
        await a.update("p", 10 + i, f"edited by a {i}")
    # And two writes decided at once, on the same version, from both: one loses and decides again.
    got = await asyncio.gather(a.remember("p", "at once a"), b.remember("p", "at once b"))
    assert {r["n"] for r in got} == {43, 44}
    assert real_counts(tmp_path) == carried(tmp_path) == (30 + 12 - 6 + 2, 0)
    for memory in (a, b):
        view = await memory.store.read_view("p")
        assert isinstance(view, IndexedView) and view.count == 38 and view.hwm == 44
    await a.close()
    await b.close()


async def test_own_commit_publishes_the_indexed_view_it_decided(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, index_threshold=20)
    await memory.import_("p", [{"text": f"seed fact {i}"} for i in range(30)])
    await memory.store.read_view("p")
    result = await memory.remember("p", "one more")
    version = _table(tmp_path).version
    cached = memory.store.cached_view("p")  # published by the commit, not read
    assert isinstance(cached, IndexedView)
    assert (cached.version, cached.count, cached.hwm) == (version, 31, result["n"])
    assert cached.head.expiring == 0
    assert await memory.store.read_view("p") is cached
    await memory.close()


async def test_retention_reads_no_expiries_where_none_can_have_passed(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, index_threshold=20)
    await memory.import_("p", [{"text": f"seed fact {i}"} for i in range(30)])
    retention = Retention(memory.store)
    view = await memory.store.read_view("p")
    assert isinstance(view, IndexedView) and view.head.expiring == 0
    assert await retention.live(view) is view and retention._lifetimes == {}
    await memory.update("p", 3, attrs={EXPIRES: "2000-01-01T00:00:00Z"})  # already past
    view = await memory.store.read_view("p")
    assert view.head.expiring == 1
    assert (await retention.live(view)).count == 29  # read, and the expired one left out
    assert await retention.expired(view, None) == [3]
    await memory.close()


async def test_a_head_without_counts_reads_and_takes_them_on_its_next_commit(
        tmp_path: Path) -> None:
    memory = await _memory(tmp_path, index_threshold=20)
    await memory.import_("p", [{"text": f"seed fact {i}"} for i in range(30)])
    await memory.remember("p", "expiring", expires_at=LATER)
    await memory.close()
    # What a table written by older code holds: a head row with no ``attrs``.
    ds = _table(tmp_path)
    ds.update({"attrs": "NULL"}, where=f"key = '{HEAD_KEY}'")
    assert _table(tmp_path).to_table(filter=f"key = '{HEAD_KEY}'").column("attrs")[0].as_py() \
        is None
    memory = await _memory(tmp_path, index_threshold=20)
    view = await memory.store.read_view("p")
    assert view.count == 31 and view.head.expiring is None  # counted; expiries unknown
    assert (await Retention(memory.store).live(view)).count == 31
    await memory.remember("p", "after the upgrade")
    assert carried(tmp_path) == real_counts(tmp_path) == (32, 1)
    await memory.close()


async def test_check_finds_and_repairs_a_wrong_carried_count(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, index_threshold=20)
    await memory.import_("p", [{"text": f"seed fact {i}"} for i in range(30)])
    await memory.forget("p", 2)
    assert carried(tmp_path) == (29, 0)
    ds = _table(tmp_path)
    ds.update({"attrs": "'{\"live\": 50, \"expiring\": 0, \"application\": 3}'"},
              where=f"key = '{HEAD_KEY}'")
    assert carried(tmp_path) == (50, 0)
    report = await check_partition(memory.store, "p")
    assert report.problems == ["the head counts 50 live items (0 with an expiry, 3 not the "
                               "model's), the rows 29 (0, 0)"]
    assert not report.repaired
    report = await check_partition(memory.store, "p", repair=True)
    assert report.repaired
    assert carried(tmp_path) == real_counts(tmp_path) == (29, 0)
    assert (await check_partition(memory.store, "p")).problems == []
    assert (await memory.store.read_view("p")).count == 29
    await memory.close()


def not_models_carried(path: Path, partition: str = "p") -> int | None:
    """The count of live items not the model's the head row carries (``semmem.audience``)."""
    rows = _table(path, partition).to_table(columns=["attrs"], filter=f"key = '{HEAD_KEY}'")
    found = json.loads(rows.column("attrs")[0].as_py()).get("application")
    return found if isinstance(found, int) else None


async def test_the_head_carries_the_items_not_the_models(tmp_path: Path) -> None:
    """Puts, deletes and facts keep the head's count of the application's pieces; a head
    without it (older code) is counted through the tags index past the threshold, and the
    model's search counts its own items only."""
    memory = await _memory(tmp_path, index_threshold=20)
    # in the model's own table, as a release before format 4 wrote them (and a replica of one
    # left running still may: the count the head carries is the audience rule's second line)
    items = StoreItems(memory, in_place=True)
    await items.put(("p",), "a", {"v": 1}, ["first text", "second text"], None)
    await items.put(("p",), "b", {"v": 2}, [], None)
    assert not_models_carried(tmp_path) == 3
    await memory.import_("p", [{"text": f"seed fact {i}"} for i in range(30)])
    await items.delete(("p",), "b")
    assert not_models_carried(tmp_path) == 2
    assert carried(tmp_path) == real_counts(tmp_path) == (32, 0)
    assert (await memory.search("p", "seed fact"))["count"] == 30
    await memory.close()
    # A head written before the count was carried: counted through the index, then carried.
    _table(tmp_path).update({"attrs": "'{\"live\": 32, \"expiring\": 0}'"},
                            where=f"key = '{HEAD_KEY}'")
    assert not_models_carried(tmp_path) is None
    memory = await _memory(tmp_path, index_threshold=20)
    view = await memory.store.read_view("p")
    assert isinstance(view, IndexedView) and view.head.application == 2
    assert (await memory.search("p", "seed fact"))["count"] == 30
    assert (await memory.remember("p", "after the upgrade"))["count"] == 31
    assert not_models_carried(tmp_path) == 2
    assert (await check_partition(memory.store, "p")).problems == []
    await memory.close()
