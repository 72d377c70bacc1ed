"""Partition quotas, decided inside the write decision: exact within one group commit and
across two stores (replicas) writing one partition, and nothing of a refused write is stored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import QuotaExceeded
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.commit.quota import Quota
from semmem.stored.items import StoreItems


async def _memory(path: Path, quota: Quota, **options: int) -> Memory:
    embedder = HashingEmbedder()
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id, quota=quota,
                  **options)
    await store.open()
    return Memory(store, embedder)


@pytest.fixture
async def limited(tmp_path: Path) -> AsyncIterator[Memory]:
    """A memory whose partitions hold at most three facts."""
    mem = await _memory(tmp_path / "db", Quota(max_items=3))
    yield mem
    await mem.close()


async def test_remember_past_item_quota_is_refused_and_stores_nothing(limited: Memory) -> None:
    for i in range(3):
        assert (await limited.remember("p", f"fact number {i}"))["count"] == i + 1
    version = (await limited.stats("p"))["version"]
    with pytest.raises(QuotaExceeded) as refused:
        await limited.remember("p", "one fact too many")
    assert refused.value.details == {"quota": "items", "limit": 3, "usage": 3,
                                     "audience": "model"}
    stats = await limited.stats("p")
    assert (stats["count"], stats["version"], stats["max_items"]) == (3, version, 3)
    assert "one fact too many" not in [it.text for it in await limited.list("p")]
    # What does not grow the partition still goes: a duplicate, an update, a forget.
    assert (await limited.remember("p", "FACT number 0"))["existing"] is True
    await limited.update("p", 1, "fact number zero")
    await limited.forget("p", 2)
    assert (await limited.remember("p", "room again"))["count"] == 3
    assert (await limited.remember("other", "another partition"))["count"] == 1


async def test_one_group_commit_admits_only_up_to_the_quota(limited: Memory) -> None:
    """Six writes of one turn, decided in turn on one view: three commit, three are refused."""
    groups = limited.store.writer.groups
    outcomes = await asyncio.gather(
        *(limited.remember("p", f"parallel fact {i}") for i in range(6)),
        return_exceptions=True)
    refused = [o for o in outcomes if isinstance(o, QuotaExceeded)]
    assert len(refused) == 3 and len([o for o in outcomes if isinstance(o, dict)]) == 3
    assert limited.store.writer.groups - groups < 6  # some of them did share a group commit
    assert (await limited.stats("p"))["count"] == 3


async def test_two_replicas_cannot_both_take_the_last_place(tmp_path: Path) -> None:
    """Each store decides on the version it commits on: the second to commit decides again
    on the first's version, and is refused."""
    a = await _memory(tmp_path / "db", Quota(max_items=2))
    b = await _memory(tmp_path / "db", Quota(max_items=2))
    try:
        await a.remember("p", "first fact")
        await b.recall("p", "first", 1000)  # b's cached view: one fact, one place left
        await a.remember("p", "second fact")
        with pytest.raises(QuotaExceeded):
            await b.remember("p", "third fact, from the other replica")
        assert (await b.stats("p"))["count"] == 2
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("loads", [4096, 0], ids=["snapshot", "table-read"])
async def test_byte_quota_counts_live_text_bytes(tmp_path: Path, loads: int) -> None:
    """The byte quota counts the UTF-8 bytes of live texts, from a snapshot or, for a
    partition too large for one, from the table's text column."""
    mem = await _memory(tmp_path / "db", Quota(max_bytes=30), write_loads=loads)
    try:
        await mem.remember("p", "é" * 10)  # 20 bytes
        with pytest.raises(QuotaExceeded) as refused:
            await mem.remember("p", "eleven byte")
        assert refused.value.details == {"quota": "bytes", "limit": 30, "usage": 20,
                                         "audience": "model"}
        await mem.remember("p", "ten bytes!")  # exactly at the limit
        with pytest.raises(QuotaExceeded):
            await mem.update("p", 2, "ten bytes!!")  # grows past it
        await mem.update("p", 1, "short")  # shrinks
        stats = await mem.stats("p")
        assert (stats["bytes"], stats["max_bytes"], stats["count"]) == (15, 30, 2)
    finally:
        await mem.close()


async def test_first_write_past_the_quota_leaves_no_table(tmp_path: Path) -> None:
    mem = await _memory(tmp_path / "db", Quota(max_bytes=4))
    try:
        with pytest.raises(QuotaExceeded):
            await mem.remember("p", "too long for the quota")
        assert await mem.partitions() == []
    finally:
        await mem.close()


@pytest.mark.parametrize("loads", [4096, 0], ids=["snapshot", "table-read"])
async def test_the_model_and_the_application_have_a_quota_each(tmp_path: Path,
                                                                 loads: int) -> None:
    """Items and bytes of the application's store pieces and of the model's facts are
    counted apart (``semmem.audience``), each against the limit: neither fills the other's."""
    mem = await _memory(tmp_path / "db", Quota(max_items=2, max_bytes=30), write_loads=loads)
    items = StoreItems(mem)
    try:
        await items.put(("p",), "a", {"v": 1}, ["x" * 20], None)
        await items.put(("p",), "b", {"v": 2}, ["x" * 10], None)  # the application: full
        first = await mem.remember("p", "y" * 20)
        assert first["count"] == 1
        assert (await mem.remember("p", "z" * 10))["count"] == 2  # the model: full
        with pytest.raises(QuotaExceeded) as refused:
            await mem.remember("p", "one fact too many")
        assert refused.value.details == {"quota": "items", "limit": 2, "usage": 2,
                                         "audience": "model"}
        with pytest.raises(QuotaExceeded) as refused:
            await items.put(("p",), "c", {"v": 3}, ["q"], None)
        assert refused.value.details == {"quota": "items", "limit": 2, "usage": 2,
                                         "audience": "application"}
        await mem.forget("p", first["n"])
        with pytest.raises(QuotaExceeded) as refused:
            await mem.remember("p", "w" * 21)  # 31 bytes of facts
        assert refused.value.details == {"quota": "bytes", "limit": 30, "usage": 10,
                                         "audience": "model"}
        stats = await mem.stats("p")  # each store's own (the application's: store/apart.py)
        assert (stats["count"], stats["application"]) == (1, 2)
    finally:
        await mem.close()
