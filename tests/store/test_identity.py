"""The store's identity record (``store/identity.py``) across two processes' handles on one
store: a change of model, format or generation by one makes the other refuse every write
(once told, through ``on_changed``); an upgrade to this release's own format by a replica is
taken on; the generation never goes back."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import StoreChanged
from semmem.memory import Memory
from semmem.store import Store, formats
from semmem.store.identity import (
    GENERATION,
    ID,
    Identity,
    fenced,
    generation_of,
    model_of,
    moved,
)
from tests.support.memory import open_memory


async def _two(tmp_path: Path) -> tuple[Memory, Store, list[StoreChanged]]:
    serving = await open_memory(tmp_path, HashingEmbedder())
    serving.retention.refresh_s = 0.0  # reads the registry before every write
    await serving.remember("p", "Prefers metric units")
    told: list[StoreChanged] = []
    serving.store.on_changed = told.append
    other = Store(str(tmp_path), dim=64, model_id="hashing-64")
    await other.open()
    return serving, other, told


@pytest.mark.parametrize("change", ["generation", "model", "later format"])
async def test_a_store_wide_change_elsewhere_refuses_every_later_write(
        tmp_path: Path, change: str) -> None:
    serving, other, told = await _two(tmp_path)
    meta = await other.meta() or {}
    assert generation_of(meta) == 1 and isinstance(meta.get(ID), str)  # a new store's record
    await serving.remember("p", "Has a cat named Tom")  # positive control: it writes
    if change == "generation":
        await other.set_meta(moved(meta))
    elif change == "model":
        await other.set_meta(fenced(meta, "hashing-other"))
    else:
        await other.set_meta({**meta, formats.KEY: formats.FORMAT + 1})
    assert generation_of(await other.meta()) == 2  # each change moves it
    for _ in range(2):
        with pytest.raises(StoreChanged, match="was changed by another process"):
            await serving.remember("p", "Lives in Lyon")
    assert len(told) == 1  # told once
    assert [it.text for it in (await other.snapshot("p")).items] == [
        "Prefers metric units", "Has a cat named Tom"]
    await serving.close()
    await other.close()


async def test_an_upgrade_to_this_releases_format_by_a_replica_is_taken_on(
        tmp_path: Path) -> None:
    other = Store(str(tmp_path), dim=64, model_id="hashing-64")
    await other.open()
    meta = await other.meta() or {}
    await other.set_meta({**meta, formats.KEY: formats.FORMAT - 1})  # as an older release left it
    serving = await open_memory(tmp_path, HashingEmbedder())
    serving.retention.refresh_s = 0.0
    # as it opened it, before the replica's format gate recorded this release's format
    serving.store.identity = Identity("hashing-64", formats.FORMAT - 1,
                                      generation_of(await other.meta()))
    await other.set_meta({**(await other.meta() or {}), formats.KEY: formats.FORMAT})
    assert (await serving.remember("p", "Prefers metric units"))["n"] == 1
    await serving.close()
    await other.close()


async def test_the_generation_never_goes_back(tmp_path: Path) -> None:
    store = Store(str(tmp_path), dim=64, model_id="hashing-64")
    await store.open()
    stale = await store.meta() or {}
    await store.set_meta(moved(stale))
    await store.set_meta(fenced(stale, "hashing-other"))  # written from an older read
    found = await store.meta() or {}
    assert found[GENERATION] == 3 and model_of(found) == "hashing-other"
    await store.close()
