"""Restores: the backup as it was, or as the live store (the ledger) allows it now; decoded
byte scans of the restored store, numbers never issued twice, no embedding at all."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidInput
from semmem.items import Item, Vectors
from semmem.lifecycle.backup import create_backup
from semmem.lifecycle.backup_restore import restore_backup
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects
from tests.support.files import decoded_with

FORGOTTEN = "forgotten since the backup: locker code 5521"
REPLACED = "replaced since the backup: lives in Lyon"
EXPIRED = "expired since the backup: in Paris until Friday"
DELETED = "in a partition deleted since: account 0077"
KEPT = "kept all along: prefers tea"


class CountingEmbedder(HashingEmbedder):
    """The fake embedder, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Count, then embed."""
        self.calls += 1
        return super().embed_batch(texts)


async def _store(path: Path, emb: HashingEmbedder) -> Store:
    store = Store(str(path), dim=emb.dim, model_id=emb.model_id)
    await store.open()
    return store


async def _history(live: Memory, target: Objects) -> str:
    """A backup, then forgets, an update, an expiry, a record edit and a deleted partition."""
    for text in (KEPT, FORGOTTEN, REPLACED, EXPIRED, "the newest, forgotten before"):
        await live.remember("p", text)
    await live.forget("p", 5)  # before the backup: a tombstone in it, the mark stays 5
    await live.remember("gone", DELETED)
    backup = await create_backup(live.store, target)
    await live.forget("p", 2)
    await live.update("p", 3, "lives in Berlin now")
    await live.update("p", 1, attrs={"note": "asked twice"})
    await live.remember("p", "after the backup")  # number 6, not in the backup
    await live.delete_partition("gone")
    return backup.id


def _expired(item: Item, now: int) -> bool:
    """The live store's retention, as the restore reads it: EXPIRED is past its expiry."""
    return item.text != EXPIRED


async def test_restore_without_ledger_brings_the_backup_back_as_it_was(
        tmp_path: Path, live: Memory, target: Objects) -> None:
    backup = await _history(live, target)
    emb = CountingEmbedder()
    into = await _store(tmp_path / "restored", emb)
    report = await restore_backup(target, backup, into)
    assert report.as_dict()["withheld"] == {"partitionsDeletedSince": [],
                                            "forgottenOrExpiredSince": {},
                                            "textUpdatedSince": {}}
    restored = Memory(into, emb)
    snap, was = await restored.snapshot("p"), await live.snapshot("p")
    assert [(it.n, it.text) for it in snap.items] == [
        (1, KEPT), (2, FORGOTTEN), (3, REPLACED), (4, EXPIRED)]
    assert list(snap.tombstones) == [5] and snap.hwm == 5
    assert (snap.items[0].ts, snap.items[0].revision) == (was.items[0].ts, 1)
    vectors = HashingEmbedder().embed_batch([it.text for it in snap.items])
    assert snap.vectors.tobytes() == vectors.tobytes()  # the stored vectors, written back
    assert emb.calls == 0  # a restore embeds nothing
    # the newest number was forgotten before the backup: still never issued again
    assert (await restored.remember("p", "first after the restore"))["n"] == 6
    assert [it.text for it in await restored.list("gone")] == [DELETED]
    # positive control of the scans below: the restored store's files show these texts
    assert decoded_with(tmp_path / "restored", FORGOTTEN)
    assert decoded_with(tmp_path / "restored", vector=vectors[2])
    await into.close()


async def test_restore_with_ledger_withholds_what_was_forgotten_replaced_expired_or_deleted(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder) -> None:
    backup = await _history(live, target)
    control = await _store(tmp_path / "control", fake_embedder)  # the same, without a ledger
    await restore_backup(target, backup, control)
    await control.close()
    for text in (FORGOTTEN, REPLACED, EXPIRED, DELETED):
        assert decoded_with(tmp_path / "control", text,
                            fake_embedder.embed_batch([text])[0]), text

    into = await _store(tmp_path / "restored", fake_embedder)
    report = (await restore_backup(target, backup, into, live.store, live=_expired)).as_dict()
    assert report["withheld"] == {"partitionsDeletedSince": ["gone"],
                                  "forgottenOrExpiredSince": {"p": [2, 4]},
                                  "textUpdatedSince": {"p": [3]}}
    assert report["recordsFromLedger"] == {"p": [1]}
    assert (report["partitions"], report["items"], report["tombstones"]) == (1, 1, 4)
    restored = Memory(into, fake_embedder)
    assert await restored.partitions() == ["p"]
    snap = await restored.snapshot("p")
    assert [(it.n, it.text, it.attrs) for it in snap.items] == [
        (1, KEPT, {"note": "asked twice"})]
    assert sorted(snap.tombstones) == [2, 3, 4, 5]
    # numbered tombstones: a stale edit of them is told "changed", not "never existed"
    assert snap.hwm == 6
    assert (await restored.remember("p", "first after the restore"))["n"] == 7
    root = tmp_path / "restored"
    assert decoded_with(root, KEPT)  # the scan sees what is there
    for text in (FORGOTTEN, REPLACED, EXPIRED, DELETED, "lives in Berlin now"):
        assert not decoded_with(root, text, fake_embedder.embed_batch([text])[0]), text
    await into.close()


async def test_restore_refuses_a_store_that_holds_a_partition(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder) -> None:
    await live.remember("p", KEPT)
    backup = (await create_backup(live.store, target)).id
    into = await _store(tmp_path / "busy", fake_embedder)
    busy = Memory(into, fake_embedder)
    await busy.remember("other", "already here")
    with pytest.raises(InvalidInput, match="not empty"):
        await restore_backup(target, backup, into)
    assert await busy.partitions() == ["other"]
    await into.close()


async def test_restore_of_a_backup_of_another_model_is_refused(
        tmp_path: Path, live: Memory, target: Objects) -> None:
    await live.remember("p", KEPT)
    backup = (await create_backup(live.store, target)).id
    other = HashingEmbedder(dim=64, model_id="hashing-other")
    into = await _store(tmp_path / "other", other)
    with pytest.raises(InvalidInput, match="model"):
        await restore_backup(target, backup, into)
    assert await into.partitions() == []
    await into.close()


def test_counting_embedder_counts() -> None:
    emb = CountingEmbedder()
    assert np.allclose(emb.embed_batch(["a b"]), HashingEmbedder().embed_batch(["a b"]))
    assert emb.calls == 1


async def test_a_restored_store_is_the_ledger_of_a_later_restore(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder) -> None:
    await live.remember("p", KEPT)
    await live.remember("p", FORGOTTEN)
    backup = (await create_backup(live.store, target)).id
    first = await _store(tmp_path / "first", fake_embedder)
    await restore_backup(target, backup, first)  # the live store was lost: this one serves
    await Memory(first, fake_embedder).forget("p", 2)
    again = await _store(tmp_path / "again", fake_embedder)
    report = (await restore_backup(target, backup, again, first)).as_dict()
    assert report["withheld"]["partitionsDeletedSince"] == []  # the same tables, restored
    assert report["withheld"]["forgottenOrExpiredSince"] == {"p": [2]}
    await first.close()
    await again.close()


@pytest.mark.parametrize("ledger", [False, True])
async def test_a_restore_carries_the_retention_override_and_what_expired_stays_gone(
        tmp_path: Path, live: Memory, target: Objects, ledger: bool) -> None:
    """A partition's override travels in the backup: the restored partition keeps it (before:
    ``effective: never``), and a fact that expired under it since the backup is written
    nowhere in the restored store, with or without a ledger."""
    from semmem.items import now_ms
    from semmem.lifecycle.retention import Retention
    from semmem.store import table_name

    await live.retention.set("alice", "2s")
    await live.retention.set("bob", "never")
    written = now_ms()
    await live.remember("alice", EXPIRED)
    await live.remember("bob", KEPT)
    manifest = await create_backup(live.store, target)
    assert decoded_with(tmp_path / "backups", EXPIRED)  # the positive control
    while now_ms() < written + 2_100:  # the fact expires under alice's override
        await asyncio.sleep(0.05)
    emb = HashingEmbedder()
    into = Store(str(tmp_path / "restored"), dim=emb.dim, model_id=emb.model_id)
    await into.open()
    report = await restore_backup(target, manifest.id, into, live.store if ledger else None)
    assert report.as_dict()["withheld"]["forgottenOrExpiredSince"] == {"alice": [1]}
    assert await into.retention() == {table_name("alice"): 2000, table_name("bob"): None}
    policy = await Retention(into, 1000).policy("bob")  # a 1 s default does not apply
    assert policy.public()["effective"] == "never"
    restored = Memory(into, emb)
    assert [it.text for it in await restored.list("bob")] == [KEPT]
    assert await restored.list("alice") == []
    assert decoded_with(tmp_path / "restored", EXPIRED,
                        emb.embed_batch([EXPIRED])[0]) == []
    await into.close()


@pytest.mark.parametrize("ledger", [False, True], ids=["as-backed-up", "with-ledger"])
async def test_a_restore_keeps_metadata_and_its_tags_so_a_filtered_search_finds_the_facts(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder,
        ledger: bool) -> None:
    """Metadata travels in a backup's record fields and the restored rows' ``tags`` are
    derived from them (with a ledger: the live store's metadata now), so an indexed filtered
    search of the restored store (its ``LABEL_LIST``) finds exactly the facts it covers."""
    from semmem.items.filters import Filter
    from semmem.items.metadata import tags
    from semmem.store.files import open_dataset
    from semmem.store.schema import LIVE_ITEMS

    await live.import_("p", [{"text": f"fact {i} about tea", "metadata": {
        "user": ["ann", "bob"][i % 2], "run": i % 3}} for i in range(60)])
    backup = (await create_backup(live.store, target)).id
    await live.update("p", 1, metadata={"user": "cid"})  # after the backup; the text unchanged
    expected = {i + 1: {"user": ["ann", "bob"][i % 2], "run": i % 3} for i in range(60)}
    if ledger:  # a fact whose text is unchanged takes the ledger's record fields
        expected[1] = {"user": "cid"}
    into = await _store(tmp_path / "restored", fake_embedder)
    await restore_backup(target, backup, into, live.store if ledger else None)
    await into.close()
    # a server started on the restored store, past its index threshold
    into = Store(str(tmp_path / "restored"), dim=fake_embedder.dim,
                 model_id=fake_embedder.model_id, index_threshold=50)
    await into.open()
    restored = Memory(into, fake_embedder, index_candidates=40)
    try:
        await restored.maintain("p")
        assert (await into.read_view("p")).indexed
        assert {it.n: it.metadata for it in await restored.list("p")} == expected
        uri = await into.conn.uri_of("p")
        assert uri is not None
        rows = open_dataset(uri, {}).to_table(columns=["n", "tags"], filter=LIVE_ITEMS)
        assert {r["n"]: r["tags"] for r in rows.to_pylist()} == {
            n: tags(meta) for n, meta in expected.items()}
        for user in ("ann", "bob", "cid"):
            want = {n for n, meta in expected.items() if meta["user"] == user}
            got = await restored.search("p", "fact about tea", 50, filter=Filter.parse(
                {"metadata": {"user": user}}))
            assert got["count"] == len(want) and {e["n"] for e in got["items"]} == want, user
    finally:
        await restored.close()
