"""A partition deleted as a tombstone commit (``semmem/store/commit/tombstone.py``), with the
interleavings that broke the folder removal forced: a write decided before the delete and
committing after it, on two stores of one directory (as two replicas)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import lance
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import now_ms
from semmem.memory import Memory
from semmem.store import ItemRow, Mutation, Store, WriteView, table_name
from semmem.store.upkeep.check import check_partition
from tests.support.files import decoded_with

SECRET = "the deleted partition's secret MARKER-tomb-7c1d"


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[tuple[Memory, Memory]]:
    """Two stores on one directory in one process: each its own caches, as two replicas."""
    emb = HashingEmbedder()
    stores = [Store(str(tmp_path / "db"), dim=emb.dim, model_id=emb.model_id)
              for _ in range(2)]
    for s in stores:
        await s.open()
    yield Memory(stores[0], emb), Memory(stores[1], emb)
    for s in stores:
        await s.close()


def _fact(view: WriteView, text: str) -> Mutation:
    ts, n = now_ms(), view.hwm + 1
    vector = HashingEmbedder().embed_batch([text])[0]
    return Mutation(items=[ItemRow(n, text, vector, ts, ts, 1)], hwm=n, result={"n": n})


async def test_a_write_decided_before_a_delete_lands_after_it_on_the_empty_partition(
        replicas: tuple[Memory, Memory], tmp_path: Path) -> None:
    """A decides a write on ``p`` (two facts); B deletes ``p`` before A commits. A's commit
    conflicts with the tombstone, its files (a copy of the tail, the secret in it) are
    discarded, and it decides again on the empty partition: number 1, the name listed again.
    Before, the delete removed the folder A then wrote its file and manifest into."""
    a, b = replicas
    root = tmp_path / "db"
    await a.remember("p", "an ordinary fact")
    await a.remember("p", SECRET)
    seen: list[int] = []

    def plan(view: WriteView) -> Mutation:
        seen.append(view.hwm)
        if len(seen) == 1:  # B deletes the partition between A's decision and its commit
            assert asyncio.run_coroutine_threadsafe(b.store.drop("p"), loop).result(60)
        return _fact(view, "the racing fact")

    loop = asyncio.new_event_loop()
    runner = asyncio.get_running_loop().run_in_executor(None, loop.run_forever)
    try:
        assert await a.store.write("p", plan) == {"n": 1}
    finally:
        loop.call_soon_threadsafe(loop.stop)
        await runner
        loop.close()
    assert seen == [2, 0]  # decided on the old partition, then on the tombstone
    for m in (a, b):
        assert [it.text for it in await m.list("p")] == ["the racing fact"]
        assert await m.partitions() == ["p"]
    assert (await check_partition(a.store, "p")).problems == []
    assert decoded_with(root, text=SECRET)  # the positive control: the old versions hold it
    await a.store.maintain("p", retention=timedelta(0))  # the purge the delete schedules
    assert decoded_with(root, text=SECRET) == []
    assert [it.text for it in await b.list("p")] == ["the racing fact"]


async def test_a_delete_keeps_counting_versions_and_a_second_one_is_a_no_op(
        replicas: tuple[Memory, Memory], tmp_path: Path) -> None:
    """The tombstone is the next version (numbers never start again, so no process takes the
    new partition for the old one); deleting a deleted partition commits nothing."""
    a, b = replicas
    uri = str(tmp_path / "db" / f"{table_name('p')}.lance")
    await a.remember("p", "a fact")
    before = lance.dataset(uri).version
    assert await b.store.drop("p") is True
    assert lance.dataset(uri).version == before + 1
    assert await a.store.drop("p") is False
    assert lance.dataset(uri).version == before + 1
    assert await a.list("p") == [] and await a.partitions() == []
    assert (await check_partition(b.store, "p")).problems == []


async def test_the_registry_pass_purges_a_partition_another_process_deleted(
        replicas: tuple[Memory, Memory], tmp_path: Path) -> None:
    """Whichever process deleted a partition (and whatever became of it: killed before its
    purge), the registry pass of a server, at its start too, purges the table within the hour
    the deletion is recorded."""
    a, b = replicas
    root = tmp_path / "db"
    await a.remember("p", SECRET)
    await a.remember("q", "another partition's fact")
    assert await a.store.drop("p") is True  # the tombstone alone: no purge of A's
    assert decoded_with(root, text=SECRET)
    await b.store.maintain_registry(retention=timedelta(0))
    assert decoded_with(root, text=SECRET) == []
    assert [it.text for it in await b.list("q")] == ["another partition's fact"]
