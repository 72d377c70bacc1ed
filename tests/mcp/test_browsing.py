"""Browsing one item or one page (MCP resources) past the index threshold: read by number from
the store, the partition never loaded; below it, from the snapshot recall uses anyway."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.audience import Caller
from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import NotFound
from semmem.mcp import browsing, resources
from semmem.memory import Memory
from semmem.store import Store


async def _memory(tmp_path: Path, count: int, threshold: int = 50) -> Memory:
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=threshold)
    await store.open()
    memory = Memory(store, embedder)
    await memory.import_("p", [{"text": f"fact {i}"} for i in range(1, count + 1)])
    return memory


async def test_indexed_partition_is_browsed_without_loading_it(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, 120)
    await memory.forget("p", 7)
    await memory.maintain("p")
    assert (await memory.store.read_view("p")).indexed
    loaded = memory.store.cache_stats()["items"]
    read = await resources.read(memory, "p", "semmem://items/43")
    assert read.contents[0].text == "fact 43"  # type: ignore[union-attr]
    with pytest.raises(NotFound):
        await resources.read(memory, "p", "semmem://items/7")  # forgotten
    with pytest.raises(NotFound):
        await resources.read(memory, "p", "semmem://items/500")
    seen: list[str] = []
    cursor = None
    while True:
        page = await resources.list_page(memory, "p", cursor, page=50)
        seen += [str(r.uri).rsplit("/", 1)[1] for r in page.resources]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [str(n) for n in range(1, 121) if n != 7]
    assert memory.store.cache_stats()["items"] == loaded  # no item of the partition loaded
    await memory.close()


async def test_small_partition_pages_from_its_snapshot(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, 5)
    items, following = await browsing.page(memory, "p", 2, 2, Caller.MODEL)
    assert [it.n for it in items] == [3, 4] and following == 4
    items, following = await browsing.page(memory, "p", 4, 2, Caller.MODEL)
    assert [it.n for it in items] == [5] and following is None
    found = await browsing.item(memory, "p", 5, Caller.MODEL)
    assert found is not None and found.text == "fact 5"
    assert await browsing.item(memory, "p", 6, Caller.MODEL) is None
    await memory.close()
