"""Recall under a filter (a token's scope): only the facts it covers, on a small partition and
an indexed one; edits outside the scope are not found."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.errors import NotFound
from semmem.items import iso, parse_iso
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.results import recent
from tests.support.memory import small_indexed_memory

T0 = parse_iso("2026-01-01T00:00:00Z")


def _loads(memory: Memory) -> int:
    """Snapshots the memory's store built: read whole, or brought forward by a delta."""
    return memory.store.snapshots.rebuilds + memory.store.snapshots.forwards


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_a_filtered_recall_shows_only_the_facts_it_covers(tmp_path: Path,
                                                                indexed: bool) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    store = memory.store
    try:
        size = 120 if indexed else 12
        await memory.import_("p", [
            {"text": f"tea note {i} about topic{i % 4}",
             "metadata": {"agent": ["support", "sales"][i % 2]}} for i in range(size)])
        if indexed:
            await memory.maintain("p")
        assert (await store.read_view("p")).indexed is indexed
        scope = Filter.parse({"metadata": {"agent": "support"}})
        support = {it.n for it in await memory.list("p", filter=scope)}
        unscoped = await memory.recall("p", "tea note topic1", 4096)
        assert {int(s["id"]) for s in unscoped.sources} - support  # control: others are recalled
        for text in ("tea note topic1", None):
            got = await memory.recall("p", text, 4096, filter=scope)
            numbers = [int(s["id"]) for s in got.sources]
            assert numbers and set(numbers) <= support, text
        none = await memory.recall("p", "tea", 4096, filter=Filter.parse(
            {"metadata": {"agent": "nobody"}}))
        assert none.sources == [] and none.text == ""
        other = min(set(range(1, size + 1)) - support)
        with pytest.raises(NotFound):
            await memory.forget("p", other, scope=scope)
        with pytest.raises(NotFound, match=f"^item {other} does not exist"):
            await memory.update("p", other, "changed", scope=scope)
        assert (await memory.get("p", other)) is not None
    finally:
        await memory.close()


async def test_a_blank_scoped_recall_of_an_indexed_partition_loads_no_snapshot(
        tmp_path: Path) -> None:
    """A scoped recall with blank text on an indexed partition built the whole snapshot on
    every request after a write (0.6–1.0 s at 20k facts); now it pages the newest rows the
    scope selects through the indexed path, and answers what the snapshot would."""
    memory = await small_indexed_memory(tmp_path / "db")
    oracle = await small_indexed_memory(tmp_path / "db")  # its listings load the partition
    try:
        await memory.import_("p", [
            {"text": f"note {i} about topic{i % 4}", "updated": iso(T0 + i * 60_000),
             "metadata": {"agent": ["support", "sales"][i % 2]}} for i in range(120)])
        await memory.maintain("p")
        scope = Filter.parse({"metadata": {"agent": "support"}})
        for round_ in range(2):  # each after a write: a new version
            await memory.remember("p", f"fresh support note {round_}",
                                  metadata={"agent": "support"})
            await memory.remember("p", f"fresh sales note {round_}", metadata={"agent": "sales"})
            assert (await memory.store.read_view("p")).indexed
            loads = _loads(memory)
            got = await memory.recall("p", None, 4096, filter=scope)
            assert _loads(memory) == loads
            built = _loads(oracle)
            support = await oracle.list("p", filter=scope)
            assert _loads(oracle) > built  # control: a listing's snapshot is counted
            want = recent(support, 4096, got.cursor)
            assert got.sources == want.sources and got.text == want.text
            assert got.sources[0]["title"] == f"fresh support note {round_}"
    finally:
        await oracle.close()
        await memory.close()
