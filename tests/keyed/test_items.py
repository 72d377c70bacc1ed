"""Keyed items on a real store: lookups by address below and past the index threshold, the
snapshot's address index carried forward by commits, writes that see pieces numbered after
their lookup, forget by address."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.embedding.fakes import HashingEmbedder
from semmem.items import now_ms
from semmem.items.address import Address, address_of, row_tags
from semmem.keyed.index import NAME, Addresses
from semmem.keyed.items import Keyed
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.views import PartitionSnapshot
from tests.support.memory import small_indexed_memory


def says(*texts: str, role: str = "user") -> list[Message]:
    return [Message(role, text, now_ms()) for text in texts]


def session(key: str) -> Address:
    return Address.of(SESSION, key)


async def test_the_address_index_follows_each_commit_and_matches_a_fresh_build(
        memory: Memory) -> None:
    talk = Conversations(memory)
    await memory.remember("p", "an ordinary fact")
    await talk.ingest("p", session("a"), says("one.", "two."))
    snap = await memory.store.snapshot("p")
    assert isinstance(snap, PartitionSnapshot)
    built = Addresses.of(snap)
    assert built.get(session("a")) == (2, 3) and built.get(session("b")) == ()
    snap.cached(NAME, Addresses.of)  # held, so the next commits carry it forward
    await talk.ingest("p", session("b"), says("three."))
    await memory.forget("p", 2)
    await talk.ingest("p", session("a"), says("four."))
    now = await memory.store.snapshot("p")
    carried = now.derived[NAME]
    assert isinstance(carried, Addresses)
    fresh = Addresses.of(now)
    assert {a: carried.get(a) for a in fresh.numbers} == dict(fresh.numbers)
    assert carried.get(session("a")) == (3, 5) and carried.in_space(SESSION) == [
        session("a"), session("b")]


def test_a_row_carries_its_address_tag_beside_its_metadata_tags() -> None:
    raw = '{"keyed": {"space": "session", "key": "s1"}, "metadata": {"team": "blue"}}'
    tags = row_tags(raw)
    assert tags is not None and session("s1").tag in tags and session("s1").space_tag in tags
    assert len(tags) == 3 and row_tags('{"note": "x"}') is None
    assert session("S1").tag != session("s1").tag  # keys are exact: case matters


async def test_lookups_past_the_index_threshold_go_through_the_tags_index(
        tmp_path: Path) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    talk = Conversations(memory)
    try:
        await memory.import_("p", [{"text": f"fact {i} about word{i}"} for i in range(60)])
        first = await talk.ingest("p", session("s1"), says("I own a red bike.",
                                                           "It has twelve gears."))
        await memory.maintain("p")
        view = await memory.store.read_view("p")
        assert view.indexed
        keyed = Keyed(memory)
        pieces = await keyed.pieces("p", session("s1"))
        assert [it.n for it in pieces] == [n for ns in first["items"] for n in ns]
        assert [address_of(it) for it in pieces] == [session("s1")] * 2
        again = await talk.ingest("p", session("s1"), says("I own a red bike.", "New one."))
        assert again["items"][0] == first["items"][0] and again["count"] == 63
        assert list(await keyed.keys("p", SESSION)) == [session("s1")]
        gone = await keyed.forget("p", session("s1"))
        assert sorted(gone) == [61, 62, 63]
        assert await keyed.pieces("p", session("s1")) == []
        assert (await memory.read_view("p")).count == 60
    finally:
        await memory.close()


async def test_concurrent_ingests_of_one_session_store_each_message_once(
        memory: Memory) -> None:
    talk = Conversations(memory)
    both = says("We met in Porto.", "It rained all week.")
    results = await asyncio.gather(*(talk.ingest("p", session("s"), both) for _ in range(4)))
    assert all(r["items"] == results[0]["items"] for r in results)
    assert (await memory.read_view("p")).count == 2


async def test_two_stores_on_one_directory_never_store_a_message_twice(tmp_path: Path) -> None:
    """Two processes' worth of caches: each decides on the pieces numbered since its lookup."""
    embedder = HashingEmbedder()
    stores = [Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id)
              for _ in range(2)]
    for store in stores:
        await store.open()
    memories = [Memory(store, embedder) for store in stores]
    try:
        await memories[0].remember("p", "warm up the table")
        for m in memories:
            await m.store.snapshot("p")  # both hold a snapshot (and an address index)
        msgs = says(*(f"message number {i}." for i in range(12)))
        results = await asyncio.gather(
            Conversations(memories[0]).ingest("p", session("s"), msgs[:8]),
            Conversations(memories[1]).ingest("p", session("s"), msgs[4:]))
        assert results[0]["items"][4:] == results[1]["items"][:4]
        pieces = await Keyed(memories[0]).pieces("p", session("s"))
        assert len(pieces) == 12 == len({it.text for it in pieces})
    finally:
        for m in memories:
            await m.close()


@pytest.mark.parametrize("bad", ["", "x" * 1025, "tab\there"])
def test_a_key_is_refused_when_empty_too_long_or_holding_control_characters(bad: str) -> None:
    from semmem.errors import InvalidArguments

    with pytest.raises(InvalidArguments):
        Address.of(SESSION, bad)


async def test_put_replaces_a_body_in_one_write_and_purges_the_old_pieces(
        memory: Memory) -> None:
    keyed = Keyed(memory)
    address = Address.of("store", "users/alice/profile")
    vec = memory.embedder.embed_batch(["a", "b", "c"])
    first = await keyed.put("p", address, [("theme dark", vec[0], {}), ("lang en", vec[1], {})])
    assert first == {"status": "stored", "items": [1, 2], "replaced": [], "count": 2}
    seq = (await memory.store.snapshot("p")).seq
    second = await keyed.put("p", address, [("theme light", vec[2], {"note": "v2"})])
    assert second == {"status": "stored", "items": [3], "replaced": [1, 2], "count": 1}
    assert (await memory.store.snapshot("p")).seq == seq + 1  # one commit
    pieces = await keyed.pieces("p", address)
    assert [(it.text, it.attrs["note"]) for it in pieces] == [("theme light", "v2")]
    assert await keyed.forget("p", address) == [3]
    assert await keyed.pieces("p", address) == []
