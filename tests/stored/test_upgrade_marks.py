"""The format gate tells an earlier release's store by what that release wrote
(``semmem/stored/marks.py``; issue 59, item 4): a store of ``62c1cbc`` records no format, yet
its model's fact whose text parses as a LangGraph item's JSON stays the model's; ``e601069``'s
store items (facts of its adapter) are still made store items, and a step stopped after its
first partition's items (keyed store pieces: the marks of a later release) completes; a
backup of a store recording no format restores as a store recording none."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.backup import create_backup
from semmem.lifecycle.backup_restore import restore_backup
from semmem.lifecycle.upgrading import upgrade
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects
from semmem.store.formats import FORMAT, KEY, format_of
from semmem.stored.items import StoreItems
from tests.support.memory import open_memory
from tests.support.server import REPO

STORES = REPO / "tests" / "data" / "stores"
# Exactly what ``e601069``'s adapter wrote for an item (sorted keys, no spaces).
JSON_FACT = '{"key":"profile","value":{"ssn":"078-05-1120"}}'


class Stop(Exception):
    """The process stops here (a crash, as far as the store is concerned)."""


def copied(release: str, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of ``release``'s store, and what it was written with."""
    shutil.copytree(STORES / release / "store", tmp_path / "db")
    return tmp_path / "db", json.loads((STORES / release / "expected.json").read_text())


async def remembered_before_the_gate(db: Path, partition: str, text: str) -> int:
    """``text`` remembered into the store as it stands, without the format gate (as the
    release that wrote it would have stored a model's fact): its number."""
    memory = await open_memory(db, HashingEmbedder())
    try:
        assert (await memory.store.meta() or {}).get(KEY) is None  # no format recorded
        n: int = (await memory.remember(partition, text))["n"]
        return n
    finally:
        await memory.close()


async def facts_of(memory: Memory, partition: str) -> dict[int, str]:
    return {it.n: it.text for it in await memory.list(partition) if not it.application}


@pytest.mark.parametrize("partition", ["users/alice", "bob"])
async def test_a_json_looking_fact_of_a_62c1cbc_store_stays_the_models(
        tmp_path: Path, partition: str) -> None:
    """Beside the release's keyed store items (``users/alice``) or in a partition without
    any (``bob``), the model's fact reading ``{"key":…,"value":{…}}`` stays its fact, and
    the application's ``get`` answers its own item (or nothing), never the model's text."""
    db, want = copied("62c1cbc", tmp_path)
    n = await remembered_before_the_gate(db, partition, JSON_FACT)
    memory = await Memory.open(str(db), HashingEmbedder())
    try:
        assert format_of(await memory.store.meta()) == FORMAT
        assert (await facts_of(memory, partition))[n] == JSON_FACT
        namespace = tuple(partition.split("/"))
        record = await StoreItems(memory).get(namespace, "profile")
        if partition == "users/alice":  # the release's own item, as it was put
            assert record is not None
            assert record.value == want["store"]["items"]["profile"]["value"]
        else:
            assert record is None
    finally:
        await memory.close()


async def test_e601069s_items_still_become_store_items_when_a_step_stops_midway(
        tmp_path: Path) -> None:
    """``e601069``'s store (no mark of a later release) is read as format 1, recorded before
    the step writes: stopped after the first partition's items were made (keyed store pieces,
    what a later release's store holds), the next open still makes the second partition's."""
    db, want = copied("e601069", tmp_path)
    # A second namespace's item, written as that release's adapter wrote it (a remember).
    n = await remembered_before_the_gate(db, "users/bob", JSON_FACT)
    memory = await open_memory(db, HashingEmbedder())
    written: list[str] = []

    async def crash(at: str, partition: str) -> None:
        if at == "written":
            written.append(partition)
            raise Stop

    try:
        with pytest.raises(Stop):
            await upgrade(memory, hook=crash)
        assert written == [want["partition"]]
        assert (await memory.store.meta() or {}).get(KEY) == 1  # detected, recorded first
        assert n in await facts_of(memory, "users/bob")  # not made yet
    finally:
        await memory.close()
    memory = await Memory.open(str(db), HashingEmbedder())
    try:
        items = StoreItems(memory)
        for key, item in want["store"]["items"].items():
            record = await items.get(tuple(want["store"]["namespace"]), key)
            assert record is not None and record.value == item["value"], key
        record = await items.get(("users", "bob"), "profile")
        assert record is not None and record.value == {"ssn": "078-05-1120"}
        assert n not in await facts_of(memory, "users/bob")
        assert format_of(await memory.store.meta()) == FORMAT
    finally:
        await memory.close()


async def test_a_62c1cbc_stores_backup_restores_with_the_json_looking_fact_the_models(
        tmp_path: Path) -> None:
    """A backup of a store that records no format records none (it used to record format 1),
    so the restored copy's first open tells it by its marks too: the model's fact stays its."""
    db, want = copied("62c1cbc", tmp_path)
    n = await remembered_before_the_gate(db, "users/alice", JSON_FACT)
    target = Objects(str(tmp_path / "backups"))
    memory = await open_memory(db, HashingEmbedder())
    try:
        manifest = await create_backup(memory.store, target)
    finally:
        await memory.close()
    assert manifest.store_format is None
    embedder = HashingEmbedder()
    into = Store(str(tmp_path / "restored"), dim=embedder.dim, model_id=embedder.model_id)
    await into.open()
    try:
        await restore_backup(target, manifest.id, into)
        assert KEY not in (await into.meta() or {})
    finally:
        await into.close()
    restored = await Memory.open(str(tmp_path / "restored"), embedder)
    try:
        assert (await facts_of(restored, "users/alice"))[n] == JSON_FACT
        record = await StoreItems(restored).get(("users", "alice"), "profile")
        assert record is not None
        assert record.value == want["store"]["items"]["profile"]["value"]
        assert format_of(await restored.store.meta()) == FORMAT
    finally:
        await restored.close()
