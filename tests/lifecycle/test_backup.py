"""Backups taken: what they hold (and do not), incremental references, checksums, expiry."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidInput
from semmem.items import Item, now_ms
from semmem.lifecycle.backup import (
    UNREFERENCED_AGE_S,
    create_backup,
    expire_backups,
    list_backups,
    load_manifest,
    verify_backup,
)
from semmem.lifecycle.backup_format import decode, object_name
from semmem.lifecycle.backup_restore import restore_backup
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects
from tests.support.files import decoded_with, files_with
from tests.support.server import ServerProcess
from tests.support.web import send, tool

SECRET = "the vault code is 4471-backup-secret"


async def test_backup_holds_live_items_and_no_text_forgotten_before_it(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder) -> None:
    await live.remember("p", "Prefers metric units")
    await live.remember("p", SECRET)
    await live.update("p", 1, "Prefers metric units, always", attrs={"note": "since 2020"})
    await live.forget("p", 2)
    # The forget window is open: the text is still in the live store's files.
    assert decoded_with(tmp_path / "live", SECRET)
    manifest = await create_backup(live.store, target)
    entry = manifest.partitions[0]
    dump = decode(target.get(object_name(entry["object"])))
    item = dump.items[0]
    assert (item.n, item.text, item.revision, item.attrs) == (
        1, "Prefers metric units, always", 2, {"note": "since 2020"})
    assert item.ts <= item.updated and item.created is not None
    assert list(dump.tombstones) == [2] and dump.head.hwm == 2
    assert dump.vectors[0].tobytes() == fake_embedder.embed_batch([item.text])[0].tobytes()
    root = tmp_path / "backups"
    assert files_with(root, "Prefers metric units, always")  # the scan sees what is there
    assert decoded_with(root, vector=dump.vectors[0])
    assert not decoded_with(root, SECRET, fake_embedder.embed_batch([SECRET])[0])
    assert not decoded_with(root, "Prefers metric units\n")  # the replaced text neither


@pytest.mark.timeout(240)
async def test_backup_under_concurrent_writes_holds_each_fact_acknowledged_before_it_whole(
        tmp_path: Path, target: Objects, fake_embedder: HashingEmbedder) -> None:
    partitions = [f"w{i}" for i in range(6)]
    acked: dict[tuple[str, int], tuple[str, float]] = {}  # the texts each write acknowledged
    stop = threading.Event()
    server = ServerProcess(tmp_path / "served").start()

    def writer(k: int) -> None:
        with server.client() as c:
            i = 0
            while not stop.is_set():
                name = partitions[(k + i) % len(partitions)]
                text = f"writer {k} fact {i} about topic {i % 7}"
                got = send(c, tool("remember", {"text": text}, partition=name))
                assert got.status_code == 200, got.text
                n = got.json()["result"]["n"]
                acked[(name, n)] = (text, time.monotonic())
                if i % 5 == 4:  # some updates too: a row replaced while the backup reads
                    edit = send(c, tool("update", {"n": n, "text": text + " (edited)"},
                                        partition=name))
                    assert edit.status_code == 200, edit.text
                    acked[(name, n)] = (text + " (edited)", time.monotonic())
                i += 1

    try:
        server.wait_ready()
        with ThreadPoolExecutor(4) as pool:
            writers = [pool.submit(writer, k) for k in range(4)]
            while len(acked) < 60 and not any(w.done() for w in writers):
                time.sleep(0.01)
            before = dict(acked)
            started = time.monotonic()
            store = Store(str(tmp_path / "served"), dim=fake_embedder.dim,
                          model_id=fake_embedder.model_id)
            await store.open()
            try:
                manifest = await create_backup(store, target)
            finally:
                await store.close()
            during = len(acked) - len(before)
            stop.set()
            for w in writers:
                w.result()
    finally:
        stop.set()
        server.stop()
    held: dict[tuple[str, int], str] = {}
    for entry in manifest.partitions:
        dump = decode(target.get(object_name(entry["object"])))
        expected = fake_embedder.embed_batch([it.text for it in dump.items])
        assert dump.vectors.tobytes() == expected.tobytes()  # every row whole: its own vector
        held.update({(entry["partition"], it.n): it.text for it in dump.items})
    assert during > 0 and len(before) >= 60  # writes went on while the backup read
    for key, (text, at) in before.items():
        assert at < started
        # acknowledged before: in it, as it was then or as an edit made it since
        assert held.get(key) in (text, text + " (edited)"), key
    for key, text in held.items():  # and nothing else: each row one acknowledged text
        assert acked[key][0] in (text, text + " (edited)"), key


async def test_incremental_backup_references_partitions_unchanged_since(
        live: Memory, target: Objects) -> None:
    for name in ("a", "b", "c"):
        await live.remember(name, f"fact of {name}")
    first = await create_backup(live.store, target)
    await live.remember("b", "a second fact of b")
    second = await create_backup(live.store, target)
    by = {p["partition"]: p for p in second.partitions}
    was = {p["partition"]: p for p in first.partitions}
    assert [by[n]["copied"] for n in "abc"] == [False, True, False]
    assert by["a"]["object"] == was["a"]["object"] and by["c"]["object"] == was["c"]["object"]
    assert by["b"]["object"] != was["b"]["object"] and by["b"]["items"] == 2
    assert len(target.ages("objects")) == 4
    # deleted and made again at the same write sequence: a new table, copied again
    await live.delete_partition("a")
    await live.remember("a", "fact of a, again")
    third = await create_backup(live.store, target)
    again = {p["partition"]: p for p in third.partitions}["a"]
    assert again["copied"] and again["seq"] == was["a"]["seq"]
    assert decode(target.get(object_name(again["object"]))).items[0].text == "fact of a, again"
    assert [m.id for m in list_backups(target)] == [first.id, second.id, third.id]


@pytest.mark.parametrize("damage", ["object", "manifest"])
async def test_verify_detects_a_corrupted_backup_and_restore_refuses_it(
        tmp_path: Path, live: Memory, target: Objects, fresh: Store, damage: str) -> None:
    await live.remember("p", "one fact")
    await live.remember("q", "another fact")
    manifest = await create_backup(live.store, target)
    assert verify_backup(target, manifest.id).as_dict()["ok"] is True
    name = (f"objects/{manifest.partitions[1]['object']}" if damage == "object"
            else f"manifests/{manifest.id}.json")
    path = tmp_path / "backups" / name
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    path.write_bytes(bytes(raw))
    if damage == "object":
        report = verify_backup(target, manifest.id).as_dict()
        assert report["ok"] is False and report["objects"] == 2
        assert report["problems"] == ["object of partition 'q' is damaged (its SHA-256 does "
                                      "not match)"]
    else:
        with pytest.raises(InvalidInput, match="damaged"):
            verify_backup(target, manifest.id)
        assert list_backups(target) == []
    with pytest.raises(InvalidInput, match="damaged"):
        await restore_backup(target, manifest.id, fresh)
    assert await fresh.partitions() == []  # nothing written before every object was checked


async def test_expire_deletes_old_backups_and_the_objects_only_they_held(
        tmp_path: Path, live: Memory, target: Objects) -> None:
    await live.remember("kept", "fact that never changes")
    await live.remember("p", SECRET)
    first = await create_backup(live.store, target)
    await live.forget("p", 1)
    await live.remember("p", "a later fact")
    while now_ms() < first.finished + 300:  # the two backups start apart in time
        await asyncio.sleep(0.02)
    second = await create_backup(live.store, target)
    root = tmp_path / "backups"
    assert files_with(root, SECRET)  # the first backup holds it: the bound docs state
    keep_s = (now_ms() - (first.created + second.created) / 2) / 1000
    report = expire_backups(target, keep_s)
    assert report["expired"] == [first.id] and report["kept"] == [second.id]
    assert report["objects_removed"] == 1
    assert not files_with(root, SECRET)
    assert verify_backup(target, second.id).as_dict()["ok"] is True  # shared object kept
    assert load_manifest(target, second.id).partitions[0]["copied"] is False


async def test_a_fact_expired_but_not_yet_swept_is_a_tombstone_in_the_backup(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder) -> None:
    await live.remember("p", "in Paris until Friday")
    await live.remember("p", "speaks Portuguese")

    def expired(item: Item, now: int) -> bool:  # retention's answer, as the backup reads it
        return item.n != 1

    manifest = await create_backup(live.store, target, live=expired)
    dump = decode(target.get(object_name(manifest.partitions[0]["object"])))
    assert [it.n for it in dump.items] == [2] and list(dump.tombstones) == [1]
    root = tmp_path / "backups"
    assert files_with(root, "speaks Portuguese")
    assert not decoded_with(root, "in Paris until Friday",
                            fake_embedder.embed_batch(["in Paris until Friday"])[0])


async def test_expire_deletes_the_temporary_files_a_killed_backup_left_once_an_hour_old(
        tmp_path: Path, live: Memory, target: Objects, fake_embedder: HashingEmbedder) -> None:
    """A backup killed inside ``put`` leaves ``objects/<sha>.tmp-…`` with fact texts in clear:
    expire deletes it once it is as old as an unreferenced object (an hour), not sooner (a
    running backup may be writing it)."""
    await live.remember("p", SECRET)
    manifest = await create_backup(live.store, target)
    root = tmp_path / "backups"
    digest = manifest.partitions[0]["object"]
    whole = (root / object_name(digest)).read_bytes()
    left = root / f"{object_name(digest)}.tmp-dead0001"  # what a SIGKILL inside put leaves
    left.write_bytes(whole)
    an_hour_ago = time.time() - UNREFERENCED_AGE_S - 60
    young = root / "objects" / "0123.tmp-live0002"  # a backup still writing it
    young.write_bytes(b"in progress")
    stale_manifest = root / "manifests" / "x.json.tmp-dead0003"
    stale_manifest.write_bytes(b"{}")
    os.utime(stale_manifest, (an_hour_ago, an_hour_ago))
    vector = fake_embedder.embed_batch([SECRET])[0]
    expire_backups(target, 0)  # the backup itself expires: its object goes at once
    assert decoded_with(root, SECRET, vector) == [left]  # the scan sees the young leftover
    os.utime(left, (an_hour_ago, an_hour_ago))
    expire_backups(target, 0)
    assert decoded_with(root, SECRET, vector) == []
    assert not left.exists() and not stale_manifest.exists() and young.exists()
