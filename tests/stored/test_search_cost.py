"""What a store search costs, and whom: its query embedded as a query (a model with a query
side: its prefix and one window) in the lane of the partition it searches, so it waits behind
that tenant's own model work and not the others'; and a filter over many items answered as
over few (that work runs in a worker thread past ``offload.INLINE_ENTRIES``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from semmem.items import Vectors
from semmem.memory import Memory
from semmem.offload import INLINE_ENTRIES
from semmem.stored.items import Put, StoreItems
from semmem.stored.namespaces import partition_of
from tests.support.memory import open_memory
from tests.support.model import HeldEmbedder

LONG = "the long weekend plans of tenant b, told at length " * 60  # ~3 KB: a call each


class SidedEmbedder(HeldEmbedder):
    """The held fake model with a query side (as e5 has): the texts embedded as queries
    recorded apart."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_queries(self, texts: list[str]) -> Vectors:
        self.queries.extend(texts)
        return self.embed_batch(texts)


@pytest.fixture
async def sided(tmp_path: Path) -> AsyncIterator[tuple[Memory, SidedEmbedder]]:
    model = SidedEmbedder()
    memory = await open_memory(tmp_path / "db", model)
    yield memory, model
    await memory.close()


async def _until(condition: object) -> None:
    """Yield to the loop until ``condition()`` holds (the queue's state, changed by tasks)."""
    for _ in range(100_000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def test_a_bound_search_is_embedded_as_a_query_in_its_partitions_lane(
        sided: tuple[Memory, SidedEmbedder]) -> None:
    memory, model = sided
    items = StoreItems(memory)
    await items.put(("b",), "k", {"v": 1}, ["tenant b's own note"], None)
    assert model.queries == []  # a put's texts are passages (the side is seen: below)
    queue = memory.model
    model.hold()
    holder = asyncio.ensure_future(queue.embed(["holding the model"], caller="x"))
    await asyncio.to_thread(model.entered.wait, 30)
    b = partition_of(("b",))
    # tenant b's own model work queued first: three long texts, a call each
    own = asyncio.ensure_future(queue.embed([f"{i} {LONG}" for i in range(3)], caller=b))
    await _until(lambda: queue.waiting == 3)
    search = asyncio.ensure_future(items.search(("b",), "where is tenant b's note", {}, 5, 0,
                                                only=b))
    await _until(lambda: queue.waiting == 4)
    other = asyncio.ensure_future(queue.embed(["tenant c's short question"], caller="c"))
    await _until(lambda: queue.waiting == 5)
    model.open.set()
    await asyncio.gather(holder, own, other)
    found = await search
    assert [r.key for r, _ in found] == ["k"]
    assert model.queries == ["where is tenant b's note"]  # the query side
    asked = model.call_of("where is tenant b's note")
    # in b's lane: behind b's own three, while c's short text waited behind one of them
    assert all(model.call_of(f"{i} {LONG}") < asked for i in range(3))
    assert model.call_of("tenant c's short question") < model.call_of(f"1 {LONG}")


async def test_a_store_wide_search_is_a_query_too(
        sided: tuple[Memory, SidedEmbedder]) -> None:
    memory, model = sided
    items = StoreItems(memory)
    await items.put(("a", "x"), "k", {"v": 1}, ["a note about tea"], None)
    found = await items.search(("a",), "tea", {}, 5, 0)
    assert [r.key for r, _ in found] == ["k"] and model.queries == ["tea"]


async def test_a_filter_over_many_items_answers_as_over_few(tmp_path: Path) -> None:
    from semmem.embedding.fakes import HashingEmbedder

    memory = await open_memory(tmp_path / "db", HashingEmbedder())
    try:
        items = StoreItems(memory)
        many = INLINE_ENTRIES * 2
        await items.put_many(("docs",), [
            Put(f"d{i}", {"kind": "wanted" if i % 50 == 0 else "noise", "i": i},
                (f"note number {i}",), None) for i in range(many)])
        await items.put(("few",), "f", {"kind": "wanted", "i": 0}, ["note number 0"], None)
        wide = await items.search(("docs",), "note number 100", {"kind": "wanted"}, 100, 0)
        assert len(wide) == len(range(0, many, 50))
        assert {r.value["kind"] for r, _ in wide} == {"wanted"}
        assert wide[0][0].key == "d100"  # ranked by the query, best first
        paged = await items.search(("docs",), None, {"i": {"$gte": many - 3}}, 2, 1)
        # one write's items share their times: then by key
        assert [r.key for r, _ in paged] == [f"d{many - 2}", f"d{many - 1}"]
        few = await items.search(("few",), "note number 0", {"kind": "wanted"}, 100, 0)
        assert [r.key for r, _ in few] == ["f"]
    finally:
        await memory.close()
