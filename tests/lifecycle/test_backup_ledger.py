"""Copies carry what forgetting needs (issue 60, items 1 and 2), on real stores: a backup holds
the sessions' ledgers of forgotten messages and the store's secret, and a restore keeps both,
so a message the model forgot before the backup is not stored again by the first whole-history
re-send after the restore (with or without the live store as ledger); with the ledger, one
forgotten after the backup stays forgotten too; and in the restored store the model's forget,
a retention expiry and the forget of one piece of two all reach the ledger."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from semmem.conversations.ingest import Conversations
from semmem.lifecycle.backup import create_backup, load_manifest
from semmem.lifecycle.backup_format import manifest_name
from semmem.lifecycle.backup_restore import RestoreReport, restore_backup
from semmem.lifecycle.sweep import sweep
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects
from tests.support.chats import CHAT, S1, said, texts


async def restored(memory: Memory, tmp_path: Path, backup: str, *, ledger: bool
                   ) -> tuple[Memory, RestoreReport]:
    fresh = Store(str(tmp_path / "restored"), dim=memory.embedder.dim,
                  model_id=memory.embedder.model_id)
    await fresh.open()
    report = await restore_backup(Objects(str(tmp_path / "backups")), backup, fresh,
                                  memory.store if ledger else None)
    await fresh.close()  # opened again as a server would: the secret read back from its files
    again = Store(str(tmp_path / "restored"), dim=memory.embedder.dim,
                  model_id=memory.embedder.model_id)
    await again.open()
    return Memory(again, memory.embedder), report


@pytest.fixture
async def talked(memory: Memory, tmp_path: Path) -> AsyncIterator[tuple[list[list[int]], str]]:
    """A session of four messages (the last of two pieces), the first forgotten by the model,
    then backed up: its pieces' numbers and the backup's id."""
    first = await Conversations(memory).ingest("p", S1, CHAT)
    items: list[list[int]] = first["items"]
    assert len(items[3]) == 2
    await memory.forget("p", items[0][0], owner=False)
    manifest = await create_backup(memory.store, Objects(str(tmp_path / "backups")))
    yield items, manifest.id


@pytest.mark.parametrize("ledger", [False, True], ids=["alone", "with-ledger"])
async def test_what_was_forgotten_is_not_stored_again_after_a_restore(
        memory: Memory, tmp_path: Path, talked: tuple[list[list[int]], str],
        ledger: bool) -> None:
    items, backup = talked
    manifest = load_manifest(Objects(str(tmp_path / "backups")), backup)
    assert manifest.secret == memory.store.secret.hex()  # the backup carries the secret
    if ledger:  # forgotten after the backup: the restore withholds it, and it stays forgotten
        await memory.forget("p", items[2][0], owner=False)
    copy, report = await restored(memory, tmp_path, backup, ledger=ledger)
    try:
        assert copy.store.secret == memory.store.secret
        assert report.as_dict()["secret"].startswith("the backup's")
        assert report.ledgers == 1
        kept = [CHAT[1].content, *([] if ledger else [CHAT[2].content])]
        assert (await texts(copy))[:len(kept)] == kept  # the positive control
        again = await Conversations(copy).ingest("p", S1, CHAT)
        assert again["items"] == [[], items[1], [] if ledger else items[2], items[3]]
        assert CHAT[0].content not in await texts(copy)
        assert (await copy.snapshot("p")).hwm == 5  # nothing numbered anew

        # in the restored store, the model's forget reaches the ledger
        await copy.forget("p", items[1][0], owner=False)
        # and so does the forget of one piece of two
        await copy.forget("p", items[3][0], owner=False)
        again = await Conversations(copy).ingest("p", S1, CHAT)
        assert again["items"] == [[], [], [] if ledger else items[2], items[3][1:]]
        assert (await copy.snapshot("p")).hwm == 5
        assert (await copy.check("p")).problems == []
    finally:
        await copy.close()


async def test_a_retention_expiry_in_a_restored_store_reaches_the_ledger(
        memory: Memory, tmp_path: Path, talked: tuple[list[list[int]], str]) -> None:
    _, backup = talked
    copy, _ = await restored(memory, tmp_path, backup, ledger=False)
    try:
        await copy.retention.set("p", "1s")
        deadline = time.monotonic() + 10
        while (await copy.search("p", "Miso"))["count"]:
            assert time.monotonic() < deadline, "the pieces never expired"
            await asyncio.sleep(0.05)
        assert (await Conversations(copy).ingest("p", S1, CHAT))["items"] == [[], [], [], []]
        assert await sweep(copy, ["p"]) == {"p": [2, 3, 4, 5]}  # the expired pieces, swept
        await copy.retention.set("p", "never")
        assert await texts(copy) == []
        # swept: the ledger names them (else the re-send would store them again)
        assert (await Conversations(copy).ingest("p", S1, CHAT))["items"] == [[], [], [], []]
        # a message never said before is stored (the positive control)
        fresh = await Conversations(copy).ingest(
            "p", S1, [*CHAT, said("user", "Miso is two.", "2023-04-01T00:00:00Z")])
        assert fresh["items"][:4] == [[], [], [], []] and fresh["items"][4] == [6]
    finally:
        await copy.close()


@pytest.mark.parametrize("ledger", [False, True], ids=["alone", "with-ledger"])
async def test_a_backup_carrying_no_secret_takes_the_live_stores_or_says_so(
        memory: Memory, tmp_path: Path, talked: tuple[list[list[int]], str],
        ledger: bool) -> None:
    items, backup = talked
    target = Objects(str(tmp_path / "backups"))
    earlier = replace(load_manifest(target, backup), secret=None)  # as an earlier release's
    target.put(manifest_name(backup), earlier.to_bytes())
    assert load_manifest(target, backup).secret is None
    copy, report = await restored(memory, tmp_path, backup, ledger=ledger)
    try:
        assert report.secret == ("ledger" if ledger else "new")
        assert (copy.store.secret == memory.store.secret) is ledger
        again = await Conversations(copy).ingest("p", S1, CHAT)
        if ledger:  # the live store's secret: its ledger and digests name the forgotten one
            assert again["items"] == [[], items[1], items[2], items[3]]
        else:  # the bound the report names: another secret, the forgotten message stored again
            assert again["items"][0] == [6] and "a new one" in report.as_dict()["secret"]
    finally:
        await copy.close()


async def test_with_the_ledger_a_message_stored_and_forgotten_since_the_backup_stays_forgotten(
        memory: Memory, tmp_path: Path, talked: tuple[list[list[int]], str]) -> None:
    items, backup = talked
    late = said("user", "Miso hid in the laundry basket.", "2023-05-01T08:00:00Z")
    later = said("user", "Miso likes the balcony.", "2023-05-02T08:00:00Z")
    stored = await Conversations(memory).ingest("p", S1, [*CHAT, late, later])
    [n], [m] = stored["items"][4:]
    await memory.forget("p", n, owner=False)  # stored and forgotten after the backup
    copy, _ = await restored(memory, tmp_path, backup, ledger=True)
    try:
        again = await Conversations(copy).ingest("p", S1, [*CHAT, late, later])
        # the backup never held it; the live store's ledger names it. ``later`` (never
        # forgotten, not in the backup) is stored: the positive control
        assert again["items"][:5] == [[], items[1], items[2], items[3], []]
        assert again["items"][5] and again["items"][5][0] > m
        assert late.content not in await texts(copy) and later.content in await texts(copy)
    finally:
        await copy.close()
