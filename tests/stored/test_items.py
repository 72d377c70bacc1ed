"""Store items on a real store: one write per put (value, index pieces, expiry), exact keys,
ranked search with the filter applied first, namespaces from the registry, refresh without a
new ``updatedAt``, and pieces the model's tools never see or edit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from semmem.errors import InvalidArguments, NotFound
from semmem.memory import Memory
from semmem.stored.batch import run
from semmem.stored.items import StoreItems
from semmem.stored.requests import parse_request
from tests.support.memory import small_indexed_memory


async def test_a_put_is_one_write_with_its_expiry_and_a_get_reads_it_back(
        memory: Memory) -> None:
    items = StoreItems(memory)
    app = await memory.application()  # the application's store (``store/apart.py``)
    before = (await app.store.snapshot("users/alice")).seq
    await items.put(("users", "alice"), "profile", {"name": "Alice"}, ["Alice"], 30.0)
    snap = await app.store.snapshot("users/alice")
    assert not await memory.store.partitions()  # nothing in the model's store
    assert snap.seq == before + 1  # value, index piece and expiry: one commit
    record = await items.get(("users", "alice"), "profile")
    assert record is not None and record.value == {"name": "Alice"}
    assert record.expires is not None and record.ttl == 30.0
    assert all(it.attrs.get("expiresAt") for it in snap.items)


async def test_keys_differing_in_case_are_two_items_and_a_put_replaces_in_place(
        memory: Memory) -> None:
    items = StoreItems(memory)
    await items.put(("u",), "Theme", {"v": "dark"}, [], None)
    await items.put(("u",), "theme", {"v": "light"}, [], None)
    first = await items.get(("u",), "Theme")
    assert first is not None and first.value == {"v": "dark"}
    await items.put(("u",), "Theme", {"v": "blue"}, ["blue"], None)
    again = await items.get(("u",), "Theme")
    other = await items.get(("u",), "theme")
    assert again is not None and again.value == {"v": "blue"}
    assert again.created == first.created and again.updated >= first.updated
    assert other is not None and other.value == {"v": "light"}
    app = await memory.application()
    assert len((await app.snapshot("u")).items) == 2  # the replaced pieces are tombstones


async def test_concurrent_puts_of_one_key_leave_one_item(memory: Memory) -> None:
    items = StoreItems(memory)
    await asyncio.gather(*(items.put(("u",), "k", {"i": i}, [f"text {i}"], None)
                           for i in range(8)))
    record = await items.get(("u",), "k")
    assert record is not None and len(record.numbers) == 1
    assert len((await (await memory.application()).snapshot("u")).items) == 1


async def test_search_filters_before_ranking_and_scores_the_best_piece(memory: Memory) -> None:
    items = StoreItems(memory)
    for i in range(60):
        await items.put(("docs",), f"d{i}", {"kind": "noise", "i": i}, [f"noise text {i}"], None)
    await items.put(("docs",), "match", {"kind": "wanted", "meta": {"lang": "en"}},
                    ["unrelated words", "the exact query text"], None)
    found = await items.search(("docs",), "the exact query text", {"kind": "wanted"}, 5, 0)
    assert [r.key for r, _ in found] == ["match"]
    assert found[0][1] is not None and found[0][1] > 0.99
    nested = await items.search((), None, {"meta": {"lang": "en"}, "i": {"$gte": 0}}, 5, 0)
    assert nested == []
    assert len(await items.search(("docs",), None, {"i": {"$gte": 50}}, 100, 0)) == 10


async def test_list_namespaces_comes_from_the_registry_and_skips_emptied_ones(
        memory: Memory) -> None:
    items = StoreItems(memory)
    await items.put(("a", "x"), "k", {"v": 1}, [], None)
    await items.put(("a", "y", "z"), "k", {"v": 1}, [], None)
    await items.put(("b",), "k", {"v": 1}, [], None)
    await memory.remember("plain", "an ordinary fact")  # a partition, not a namespace
    listed = await run(items, parse_request({"ops": [
        {"op": "list"},
        {"op": "list", "conditions": [{"type": "prefix", "path": ["a"]}], "maxDepth": 2},
        {"op": "list", "conditions": [{"type": "suffix", "path": ["*", "z"]}]}]}))
    assert listed == [[["a", "x"], ["a", "y", "z"], ["b"]], [["a", "x"], ["a", "y"]],
                      [["a", "y", "z"]]]
    await items.delete(("b",), "k")
    assert await run(items, parse_request({"ops": [{"op": "list"}]})) == [
        [["a", "x"], ["a", "y", "z"]]]


async def test_refresh_moves_the_expiry_not_updated_at(memory: Memory) -> None:
    items = StoreItems(memory)
    await items.put(("u",), "k", {"v": 1}, [], 1.0)
    record = await items.get(("u",), "k")
    assert record is not None and record.expires is not None
    await asyncio.sleep(0.01)
    await run(items, parse_request({"ops": [{"op": "get", "namespace": ["u"], "key": "k",
                                             "refreshTtl": True}]}))
    after = await items.get(("u",), "k")
    assert after is not None and after.expires is not None
    assert after.expires > record.expires and after.updated == record.updated


async def test_the_models_tools_neither_see_nor_edit_store_items(memory: Memory) -> None:
    items = StoreItems(memory)
    await items.put(("alice",), "profile", {"diet": "vegan"}, ["Alice is vegan"], None)
    assert (await memory.recall("alice", "Alice is vegan", 2000)).lines == []
    assert (await memory.search("alice", "Alice is vegan"))["items"] == []
    assert (await memory.recall("alice", None, 2000)).lines == []
    fact = await memory.remember("alice", "Alice is vegan")  # a fact: not the piece's twin
    assert "existing" not in fact
    shown = await memory.search("alice", "Alice is vegan")
    assert [e["n"] for e in shown["items"]] == [fact["n"]]  # positive control: it sees facts
    await memory.remember("alice", '{"key":"profile","value":{"diet":"carnivore"}}')
    record = await items.get(("alice",), "profile")
    assert record is not None and record.value == {"diet": "vegan"}
    # the numbers are each store's own: the model's first fact is 1 though the application
    # wrote first, and a number the model was never given is one that does not exist
    assert fact["n"] == 1 and record.numbers == (1,)
    with pytest.raises(NotFound, match="item 3 does not exist"):
        await memory.update("alice", 3, "Alice eats meat", owner=False)
    with pytest.raises(NotFound, match="item 3 does not exist"):
        await memory.forget("alice", 3, owner=False)


def test_unknown_operators_and_oversized_values_are_refused() -> None:
    with pytest.raises(InvalidArguments, match=r"\$in"):
        parse_request({"ops": [{"op": "search", "filter": {"a": {"$in": [1]}}}]})
    with pytest.raises(InvalidArguments, match="bytes"):
        parse_request({"ops": [{"op": "put", "namespace": ["u"], "key": "k",
                                "value": {"v": "x" * 300_000}}]})


async def test_a_run_of_puts_is_one_write_per_namespace(memory: Memory) -> None:
    items = StoreItems(memory)
    app = await memory.application()
    await items.put(("u",), "a", {"v": 0}, ["zero"], None)
    before = (await app.store.snapshot("u")).seq
    out = await run(items, parse_request({"ops": [
        {"op": "put", "namespace": ["u"], "key": "a", "value": {"v": 1}, "index": ["one"]},
        {"op": "put", "namespace": ["u"], "key": "b", "value": {"v": 2}},
        {"op": "put", "namespace": ["w"], "key": "a", "value": {"v": 3}},
        {"op": "put", "namespace": ["u"], "key": "a", "value": {"v": 4}, "ttl": 5},
        {"op": "get", "namespace": ["u"], "key": "a"}]}))
    assert (await app.store.snapshot("u")).seq == before + 1
    assert out[0] == out[3] and out[4]["value"] == {"v": 0}  # read before the batch's writes
    first = await items.get(("u",), "a")
    assert first is not None and first.value == {"v": 4} and first.expires
    assert len((await app.snapshot("u")).items) == 2


async def test_past_the_index_threshold_get_search_and_list_use_the_tags_index(
        tmp_path: Path) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    try:
        items = StoreItems(memory)
        await run(items, parse_request({"ops": [
            {"op": "put", "namespace": ["big"], "key": f"k{i}", "value": {"i": i},
             "index": [f"note number {i}"]} for i in range(60)]}))
        await memory.maintain("big")  # both stores' passes
        assert (await (await memory.application()).store.read_view("big")).indexed
        got = await items.get(("big",), "k7")
        assert got is not None and got.value == {"i": 7}
        found = await items.search(("big",), "note number 42", {"i": {"$gte": 40}}, 3, 0)
        assert found[0][0].key == "k42" and all(r.value["i"] >= 40 for r, _ in found)
        assert await run(items, parse_request({"ops": [{"op": "list"}]})) == [[["big"]]]
    finally:
        await memory.close()


async def test_an_export_imported_into_another_store_keeps_the_items(
        memory: Memory, tmp_path: Path) -> None:
    items = StoreItems(memory)
    await memory.remember("u", "Alice is vegan")  # a fact with an index text's words
    await items.put(("u",), "profile", {"diet": "vegan"}, ["Alice is vegan", "x " * 400], 60.0)
    exported = [r async for r in memory.export("u")]  # the fact, then the item's pieces
    assert len(exported) == 4
    other = await Memory.open(str(tmp_path / "other"), memory.embedder)
    try:
        await other.import_("u", exported)
        again = StoreItems(other)
        got = await again.get(("u",), "profile")
        assert got is not None and got.value == {"diet": "vegan"} and got.ttl == 60.0
        both = [len((await core.snapshot("u")).items) for core in await other.cores()]
        assert both == [1, 3]  # the fact in the model's store, the pieces in the other
        await other.import_("u", exported)  # a second import adds nothing
        assert [len((await core.snapshot("u")).items) for core in await other.cores()] == both
    finally:
        await other.close()
