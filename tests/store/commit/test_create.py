"""A table is made once: a replica paused while making a partition's table, or the store's
registry, after it found none and uploaded its first files, finds the other replica's table
there when it goes on, and keeps what the other wrote (``store/commit/create.py``). Lance's
own create mode overwrote it (the other's acknowledged first fact lost, both given number 1)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store, table_name
from semmem.store.commit.create import table_uri
from semmem.store.registry import REGISTRY_TABLE
from semmem.store.upkeep.check import check_partition
from tests.store.test_requests import BUCKET, paused, proxy  # noqa: F401 - fixtures
from tests.support.moto import options
from tests.support.s3proxy import Fault, S3Proxy


def _store(endpoint: str, prefix: str) -> Store:
    emb = HashingEmbedder()
    return Store(f"s3://{BUCKET}/{prefix}", dim=emb.dim, model_id=emb.model_id,
                 storage_options=options(endpoint))


async def _memory(endpoint: str, prefix: str) -> Memory:
    store = _store(endpoint, prefix)
    await store.open()
    return Memory(store, HashingEmbedder())


def _hold_first_upload(proxy: S3Proxy, table: str) -> None:  # noqa: F811
    """Hold the reply to the proxied replica's first data file of ``table`` (it is stored)."""
    proxy.faults(Fault("hold", method="PUT", path=rf"/{table}\.lance/data/"))


@pytest.mark.timeout(180)
async def test_a_replica_paused_making_a_partition_keeps_the_others_first_fact(
        paused: S3Proxy) -> None:  # noqa: F811
    slow = await _memory(paused.endpoint, "made")
    other = await _memory(paused.upstream_endpoint, "made")
    _hold_first_upload(paused, table_name("p"))
    write = asyncio.create_task(slow.remember("p", "the paused replica's fact"))
    assert await asyncio.to_thread(paused.state.held.wait, 60)  # found no table, uploading
    first = await other.remember("p", "the other replica's first fact")
    assert first["n"] == 1
    paused.release()
    assert (await write)["n"] == 2
    fresh = await _memory(paused.upstream_endpoint, "made")
    assert [(it.n, it.text) for it in await fresh.list("p")] == [
        (1, "the other replica's first fact"), (2, "the paused replica's fact")]
    assert not (await check_partition(fresh.store, "p")).problems
    for m in (slow, other, fresh):
        await m.close()


@pytest.mark.timeout(180)
async def test_a_replica_paused_making_the_registry_keeps_the_others_secret_and_names(
        paused: S3Proxy) -> None:  # noqa: F811
    slow = _store(paused.endpoint, "registry")
    _hold_first_upload(paused, REGISTRY_TABLE)
    opening = asyncio.create_task(slow.open())
    assert await asyncio.to_thread(paused.state.held.wait, 60)
    other = await _memory(paused.upstream_endpoint, "registry")
    await other.remember("q", "a fact in a partition the other replica made")
    assert await other.partitions() == ["q"]
    paused.release()
    await opening
    assert slow.secret == other.store.secret  # one secret: idempotency records agree
    fresh = await _memory(paused.upstream_endpoint, "registry")
    assert await fresh.partitions() == ["q"]
    assert fresh.store.secret == other.store.secret
    for m in (other, fresh):
        await m.close()
    await slow.close()


@pytest.mark.timeout(180)
async def test_a_partition_made_whose_first_commit_lost_its_reply_keeps_its_files(
        paused: S3Proxy) -> None:  # noqa: F811
    """The first manifest lands and its reply is lost (the engine reads it back to learn the
    outcome): the table is the one this replica made, its files stay, its write goes on."""
    memory = await _memory(paused.endpoint, "ambiguous-create")
    paused.faults(Fault("drop_after_success", method="PUT",
                        path=rf"/{table_name('p')}\.lance/_versions/"))
    assert (await memory.remember("p", "a fact in a partition made once"))["n"] == 1
    assert [f.applied for f in paused.state.faults] == [1]  # the fault was met
    paused.faults()
    fresh = await _memory(paused.upstream_endpoint, "ambiguous-create")
    assert [it.text for it in await fresh.list("p")] == ["a fact in a partition made once"]
    assert not (await check_partition(fresh.store, "p")).problems
    for m in (memory, fresh):
        await m.close()


def test_a_table_lives_where_lancedb_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.chdir(tmp_path)
    assert table_uri("data", "t") == f"{tmp_path}/data/t.lance"  # relative: the default
    assert table_uri("s3://b/p/", "t") == "s3://b/p/t.lance"
    assert table_uri("s3+ddb://b/p?ddbTableName=x", "t") == "s3+ddb://b/p/t.lance?ddbTableName=x"
