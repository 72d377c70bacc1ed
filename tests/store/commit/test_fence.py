"""Write fences: a replica idle on an old version while another cleans up never commits blind;
``semmem check`` finds and repairs what a blind commit did."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store, table_name
from semmem.store.commit.fence import Fence, gaps, listed_versions, version_of
from semmem.store.upkeep.check import check_partition
from tests.support.files import decoded_with

# A small fence, so a cleanup may remove versions within a second: the shipped one is the same
# mechanism with a larger budget (3 s) and skew (1 s).
FENCE = Fence(skew=0.05, budget=0.3)
SECRET = "the secret is MARKER-7f3a1c"


def _store(path: Path, emb: HashingEmbedder) -> Store:
    return Store(str(path), dim=emb.dim, model_id=emb.model_id, fence=FENCE,
                 version_retention=timedelta(0))


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[tuple[Memory, Memory]]:
    """Two stores on one directory in one process: each its own caches, as two replicas."""
    emb = HashingEmbedder()
    a, b = _store(tmp_path / "db", emb), _store(tmp_path / "db", emb)
    await a.open()
    await b.open()
    yield Memory(a, emb), Memory(b, emb)
    await a.close()
    await b.close()


async def _wait_for_cleanup(memory: Memory, partition: str) -> None:
    """Maintain until every old version is gone (the fence makes cleanup wait for them to be
    old enough): afterwards only the latest manifest is left."""
    uri = f"{memory.uri}/{table_name(partition)}.lance"
    for _ in range(20):
        await memory.store.maintain(partition, retention=timedelta(0))
        if len(listed_versions(uri, {})) == 1:
            return
    pytest.fail("the old versions were never cleaned up")


async def _numbers_on_disk(uri: str, partition: str) -> list[tuple[str, int]]:
    ds = lance.dataset(f"{uri}/{table_name(partition)}.lance")
    return sorted((r["key"], r["n"]) for r in ds.to_table(columns=["key", "n"]).to_pylist())


async def test_an_idle_replica_writes_after_anothers_cleanup_without_reusing_a_number(
        replicas: tuple[Memory, Memory]) -> None:
    a, b = replicas
    assert (await a.remember("p", "fact one from A"))["n"] == 1  # A holds version 2 now
    assert (await b.remember("p", "fact two from B"))["n"] == 2
    assert (await b.remember("p", "fact three from B"))["n"] == 3
    await b.update("p", 2, "fact two from B, updated")
    await _wait_for_cleanup(b, "p")
    assert (await a.remember("p", "fact four from A"))["n"] == 4
    assert await _numbers_on_disk(a.uri, "p") == [("head", 4), ("i:1", 1), ("i:2", 2),
                                                  ("i:3", 3), ("i:4", 4)]
    fresh = _store(Path(a.uri), HashingEmbedder())
    await fresh.open()
    texts = [it.text for it in (await fresh.snapshot("p")).items]
    assert texts == ["fact one from A", "fact two from B, updated", "fact three from B",
                     "fact four from A"]
    assert not (await check_partition(fresh, "p")).problems


async def test_a_forgotten_text_stays_gone_when_an_idle_replica_writes_after_the_cleanup(
        replicas: tuple[Memory, Memory]) -> None:
    a, b = replicas
    emb = HashingEmbedder()
    vector = emb.embed_batch([SECRET])[0]
    root = Path(a.uri)
    await a.remember("p", "an ordinary fact")
    await a.remember("p", SECRET)
    assert decoded_with(root, SECRET, vector)  # the scan sees the text and its vector
    await b.forget("p", 2)
    await b.remember("p", "a fact from B")
    await _wait_for_cleanup(b, "p")
    assert decoded_with(root, SECRET, vector) == []
    await a.remember("p", "anything at all")
    assert decoded_with(root, SECRET, vector) == []
    assert [it.text for it in (await a.list("p"))] == ["an ordinary fact", "a fact from B",
                                                       "anything at all"]
    exported = [row async for row in a.export("p")]
    assert len(exported) == 3 and SECRET not in str(exported)


async def test_a_write_decided_before_a_cleanup_decides_again_past_its_fence(
        replicas: tuple[Memory, Memory]) -> None:
    """A write whose decision is older than the fence's budget confirms its version again
    before committing; the other replica's writes and cleanup in between make it decide again
    on the latest version (its plan runs twice)."""
    from semmem.items import now_ms
    from semmem.store import ItemRow, Mutation, WriteView

    a, b = replicas
    emb = HashingEmbedder()
    await a.remember("p", "fact one")
    seen: list[int] = []

    def plan(view: WriteView) -> Mutation:
        seen.append(view.hwm)
        if len(seen) == 1:  # the other replica writes and cleans up meanwhile
            done = asyncio.run_coroutine_threadsafe(_meanwhile(b), loop)
            done.result(60)
        ts = now_ms()
        n = view.hwm + 1
        return Mutation(items=[ItemRow(n, f"fact {n}", emb.embed_batch([f"fact {n}"])[0],
                                       ts, ts, 1)], hwm=n, result={"n": n})

    loop = asyncio.new_event_loop()
    runner = asyncio.get_running_loop().run_in_executor(None, loop.run_forever)
    try:
        assert await a.store.write("p", plan) == {"n": 4}
    finally:
        loop.call_soon_threadsafe(loop.stop)
        await runner
        loop.close()
    assert seen == [1, 3]
    assert [k for k, _ in await _numbers_on_disk(a.uri, "p")].count("head") == 1


async def _meanwhile(b: Memory) -> None:
    await b.remember("p", "fact two")
    await b.remember("p", "fact three")
    await _wait_for_cleanup(b, "p")


async def test_check_repairs_a_number_held_twice_and_lets_a_forget_win(
        tmp_path: Path) -> None:
    """What a blind commit left (two heads, one number for two texts, a forgotten text back
    beside its tombstone): ``check`` finds each; the repair keeps the first text's number,
    gives the second a fresh one, and the forget wins; after the purge the text is in no file."""
    emb = HashingEmbedder()
    store = _store(tmp_path / "db", emb)
    await store.open()
    memory = Memory(store, emb)
    for text in ("fact one", SECRET, "fact three"):
        await memory.remember("p", text)
    await memory.forget("p", 2)
    uri = f"{memory.uri}/{table_name('p')}.lance"
    ds = lance.dataset(uri)
    rows = ds.to_table().to_pylist()
    head = next(r for r in rows if r["key"] == "head")
    one = next(r for r in rows if r["key"] == "i:1")
    lance.write_dataset(pa.Table.from_pylist([  # what a blind commit on an old version adds
        {**head, "n": 2, "seq": 2},
        {**one, "key": "i:3", "n": 3, "text": "a later fact", "seq": 9, "ts": one["ts"] + 10**6},
        {**one, "key": "i:2", "n": 2, "text": SECRET, "seq": 9},
    ], schema=ds.schema), uri, mode="append")
    found = await check_partition(store, "p")
    assert found.problems == ["2 head rows", "2 rows for number 2", "2 rows for number 3"]
    repaired = await check_partition(store, "p", repair=True)
    assert repaired.repaired and repaired.renumbered == {3: 4} and repaired.forgotten == [2]
    assert not (await check_partition(store, "p")).problems
    assert [(it.n, it.text) for it in await memory.list("p")] == [
        (1, "fact one"), (3, "fact three"), (4, "a later fact")]
    assert (await memory.remember("p", "fact five"))["n"] == 5
    assert decoded_with(tmp_path / "db", SECRET)  # old versions still hold it: purge them
    await _wait_for_cleanup(memory, "p")
    assert decoded_with(tmp_path / "db", SECRET) == []


def test_manifest_names_of_both_schemes_give_their_version() -> None:
    assert version_of("18446744073709551610.manifest") == 5
    assert version_of("7.manifest") == 7
    assert version_of("latest_version_hint.json") is None
    assert gaps({1, 2, 5}, 1, 6) == [3, 4]


def test_retention_is_raised_to_the_fences_floor(tmp_path: Path) -> None:
    emb = HashingEmbedder()
    store = Store(str(tmp_path), dim=emb.dim, model_id=emb.model_id,
                  version_retention=timedelta(seconds=1))
    assert store.version_retention == timedelta(seconds=Fence().floor) == timedelta(seconds=5)


async def test_a_retry_through_a_stale_replica_replays_instead_of_applying_twice(
        replicas: tuple[Memory, Memory]) -> None:
    """The host's retry of a write whose reply was lost lands on the other replica, which
    holds the partition at a version from before the write, cleaned up since."""
    from semmem.rules import Operation

    a, b = replicas
    await b.remember("p", "fact one")  # B holds this version
    op = Operation.of("retried-op", "remember", {"text": "fact two"}, None)
    first = await a.remember("p", "fact two", op=op)
    await a.remember("p", "fact three")
    await _wait_for_cleanup(a, "p")
    assert await b.remember("p", "fact two", op=op) == first
    assert [it.text for it in await b.list("p")] == ["fact one", "fact two", "fact three"]
