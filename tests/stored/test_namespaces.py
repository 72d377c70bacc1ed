"""The namespace listing is a system record, not a user's partition (issue 54, 2): retention
never expires it, no quota counts it, no owner's listing shows it or delete removes it, it is
rebuilt from the data (import, restore, ``check --repair``), it goes with its namespace's last
item or its partition, name and all, and listing reads only what it answers."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.retention import Retention
from semmem.lifecycle.sweep import sweep
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.commit.quota import Quota
from semmem.store.views import ReadView
from semmem.stored.batch import run
from semmem.stored.items import StoreItems
from semmem.stored.requests import parse_request
from tests.support.files import decoded_with
from tests.support.memory import open_memory


async def listed(items: StoreItems, **op: object) -> list[list[str]]:
    found: list[list[str]] = (await run(items, parse_request(
        {"ops": [{"op": "list", **op}]})))[0]
    return found


async def test_retention_never_expires_a_namespace_whose_items_live(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``SEMMEM_RETENTION=20s``, the model's facts' max age: the application's items, in
    their own store, expire by their own TTL alone (``store/apart.py``), so items written 24 s
    and 14 s ago are still got, listed and searched after the model's retention sweep."""
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id)
    await store.open()
    memory = Memory(store, embedder, retention=Retention(store, 20_000))
    real = time.time_ns
    skew = [0]
    monkeypatch.setattr(time, "time_ns", lambda: real() + skew[0])  # the wall clock, moved
    try:
        items = StoreItems(memory)
        await memory.remember("users/alice", "an old fact")
        await items.put(("users", "alice"), "first", {"v": 1}, ["first value"], None)
        skew[0] = 10 * 10**9
        await items.put(("users", "alice"), "second", {"v": 2}, ["second value"], None)
        skew[0] = 24 * 10**9
        await sweep(memory)  # the retention machinery: what expired is forgotten
        await sweep(await memory.application())
        assert (await memory.recall("users/alice", None, 2000)).lines == []  # positive control
        assert await items.get(("users", "alice"), "first") is not None
        assert await items.get(("users", "alice"), "second") is not None
        assert await listed(items) == [["users", "alice"]]
        found = await items.search(("users",), None, {}, 10, 0)
        assert [r.key for r, _ in found] == ["second", "first"]
    finally:
        await memory.close()


async def test_a_partition_quota_does_not_bound_how_many_namespaces_exist(
        tmp_path: Path) -> None:
    """``SEMMEM_PARTITION_MAX_ITEMS=20``: 25 users' first puts all land and are listed."""
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  quota=Quota(20, None))
    await store.open()
    memory = Memory(store, embedder)
    try:
        items = StoreItems(memory)
        for i in range(25):
            await items.put(("users", f"u{i:02d}"), "profile", {"i": i}, [], None)
        assert await listed(items, limit=100) == [["users", f"u{i:02d}"] for i in range(25)]
    finally:
        await memory.close()


async def test_the_listing_is_no_partition_an_owner_lists_or_deletes(memory: Memory) -> None:
    items = StoreItems(memory)
    await items.put(("users", "alice"), "k", {"v": 1}, [], None)
    await memory.remember("plain", "an ordinary fact")
    assert await memory.partitions() == ["plain"]  # the model's store holds no store item
    assert await memory.owned_partitions() == ["plain", "users/alice"]
    assert await memory.delete_partition("%store-namespaces") is False
    assert await listed(items) == [["users", "alice"]]


async def test_an_import_restore_or_repair_lists_what_it_holds(
        tmp_path: Path, memory: Memory) -> None:
    items = StoreItems(memory)
    await items.put(("users", "alice"), "profile", {"name": "Alice"}, ["Alice"], None)
    exported = [r async for r in memory.export("users/alice")]
    other = await open_memory(tmp_path / "other", HashingEmbedder())
    try:
        into = StoreItems(other)
        await other.import_("users/alice", exported)
        assert (await into.get(("users", "alice"), "profile")) is not None
        assert await listed(into) == [["users", "alice"]]
        assert [r.key for r, _ in await into.search(("users",), None, {}, 5, 0)] == ["profile"]
        app = await other.application()
        await app.store.drop_record("users/alice")  # as if lost: check --repair rebuilds
        assert await listed(into) == []  # positive control
        report = await other.check("users/alice", repair=True)
        assert report.repaired
        assert await listed(into) == [["users", "alice"]]
    finally:
        await other.close()


async def test_a_namespace_entry_goes_with_its_last_item_and_its_name_with_the_partition(
        memory: Memory) -> None:
    name = "erase-ns-marker-7a1c"
    items = StoreItems(memory)
    await items.put((name,), "k", {"v": 1}, [], None)
    await items.put((name,), "k2", {"v": 2}, [], None)
    await memory.remember("kept", "another fact")
    app = await memory.application()
    await app.store.maintain_registry(retention=timedelta(0))
    assert decoded_with(Path(memory.uri), name)  # positive control: the name is in the files
    await items.delete((name,), "k")
    assert await listed(items) == [[name]]
    await items.delete((name,), "k2")
    assert await listed(items) == []
    assert name not in {r["partition"] for r in (await app.store.records()).values()}
    await memory.delete_partition(name)
    await app.store.maintain_registry(retention=timedelta(0))
    assert decoded_with(Path(memory.uri), name) == []


async def test_a_restore_lists_the_namespaces_it_restores(tmp_path: Path,
                                                          memory: Memory) -> None:
    from semmem.lifecycle.backup import create_backup
    from semmem.lifecycle.backup_restore import restore_backup
    from semmem.store.copies.objects import Objects

    items = StoreItems(memory)
    await items.put(("users", "bob"), "profile", {"name": "Bob"}, ["Bob"], None)
    await memory.remember("plain", "an ordinary fact")
    target = Objects(str(tmp_path / "backups"))
    manifest = await create_backup(memory.store, target)
    embedder = HashingEmbedder()
    fresh = Store(str(tmp_path / "fresh"), dim=embedder.dim, model_id=embedder.model_id)
    await fresh.open()
    await restore_backup(target, manifest.id, fresh)
    restored = Memory(fresh, embedder)
    try:
        into = StoreItems(restored)
        assert (await into.get(("users", "bob"), "profile")) is not None
        assert await listed(into) == [["users", "bob"]]
    finally:
        await restored.close()


class Counting:
    """The memory core as store items' collaborator (``stored.ports.Core``), counting the
    partition views it hands out."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.opened: list[str] = []
        self.idempotency_ttl_ms = memory.idempotency_ttl_ms
        self.model = memory.model
        self.numbers_where = memory.numbers_where
        self.numbered = memory.numbered
        self.liveness = memory.liveness
        self.commit = memory.commit
        self.listings = memory.listings

    async def application(self) -> Counting:
        return self

    async def latest_view(self, partition: str) -> ReadView:
        self.opened.append(partition)
        return await self.memory.latest_view(partition)


async def test_a_listing_opens_only_the_namespaces_it_answers(memory: Memory) -> None:
    for i in range(30):
        await StoreItems(memory).put(("users", f"u{i:02d}"), "k", {"i": i}, [], None)
    core = Counting(await memory.application())
    items = StoreItems(core)
    assert await listed(items, conditions=[{"type": "prefix", "path": ["users"]}],
                        limit=3) == [["users", "u00"], ["users", "u01"], ["users", "u02"]]
    assert len(core.opened) == 3
    core.opened.clear()
    assert await listed(items, limit=2, offset=5) == [["users", "u05"], ["users", "u06"]]
    assert len(core.opened) == 7
