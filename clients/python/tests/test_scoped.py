"""Metadata, filters and delete by filter against a real server with ``SEMMEM_TOOL_METADATA``
on: the model's tools (``remember``/``update`` with ``metadata``, ``search`` with ``filter``)
and the owner's calls (``list``/``items`` with ``filter``, ``forget_matching``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from semmem_client import Client, InvalidArguments, InvalidRequest

from conftest import PATH, async_client, serving
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server whose tools take metadata and filters."""
    with serving(tmp_path_factory.mktemp("scoped") / "db", SEMMEM_TOOL_METADATA="1") as proc:
        yield proc


@pytest.fixture
def owner(scoped: ServerProcess) -> Iterator[Client]:
    """A client with both tokens on the scoped server."""
    with Client(scoped.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH) as c:
        yield c


def test_metadata_on_writes_and_a_filtered_search(owner: Client, partition: str) -> None:
    """Metadata given to ``remember`` comes back on search hits and owner reads; a filtered
    search holds only the facts it covers and counts them; ``update`` replaces metadata whole
    and a turn passes both through; a nested value is the server's ``InvalidArguments``."""
    alice = owner.remember(partition, "Alice drinks green tea", metadata={"user": "alice"})
    owner.remember(partition, "Bob drinks black tea", metadata={"user": "bob", "vip": True})
    found = owner.search(partition, "tea", filter={"metadata": {"user": "alice"}})
    assert [(e["n"], e.get("metadata")) for e in found["items"]] == [
        (alice["n"], {"user": "alice"})]
    assert found["count"] == 1
    assert owner.search(partition, "tea")["count"] == 2  # no filter: every fact
    turn = owner.turn(partition, None)
    turn.update(alice["n"], "Alice drinks oolong", metadata={"user": "alice", "vip": True})
    vip = turn.search("tea drinks", filter={"metadata": {"vip": True}})
    assert sorted(e["n"] for e in vip["items"]) == [1, 2] and vip["count"] == 2
    fact = owner.get(partition, alice["n"])
    assert fact is not None and fact["metadata"] == {"user": "alice", "vip": True}
    later = owner.search(partition, "tea", filter={"updated": {"gt": fact["updated"]}})
    assert later == {"items": [], "count": 0}
    with pytest.raises(InvalidArguments):
        owner.remember(partition, "Carol", metadata={"user": {"nested": "no"}})


def test_owner_lists_by_filter_and_forgets_matching(owner: Client, partition: str) -> None:
    """``list``/``items`` with a filter page through the facts it covers; ``forget_matching``
    forgets exactly those (the answer names them), leaves the rest, and never reuses their
    numbers; an empty filter is refused before sending, a bad one by the server (400)."""
    for i, user in enumerate(["eve", "frank", "eve", "eve"]):
        owner.remember(partition, f"Fact {i} about {user}", metadata={"user": user})
    eve = {"metadata": {"user": "eve"}}
    page = owner.list(partition, limit=2, filter=eve)
    assert ([i["n"] for i in page["items"]], page["count"], page["next"]) == ([1, 3], 3, 2)
    assert [i["n"] for i in owner.items(partition, page=1, filter=eve)] == [1, 3, 4]
    gone = owner.forget_matching(partition, eve)
    assert gone == {"status": "stored", "forgotten": [1, 3, 4], "count": 3}
    assert [i["n"] for i in owner.items(partition)] == [2]
    assert owner.list(partition, filter=eve)["count"] == 0
    assert owner.forget_matching(partition, eve)["forgotten"] == []
    assert owner.remember(partition, "Fact 5 about eve", metadata={"user": "eve"})["n"] == 5
    with pytest.raises(ValueError, match="delete_partition"):
        owner.forget_matching(partition, {})
    with pytest.raises(InvalidRequest) as bad:
        owner.list(partition, filter={"partition": "other"})
    assert bad.value.status == 400


def test_scoped_calls_async(scoped: ServerProcess, partition: str) -> None:
    """The same calls on ``AsyncClient`` (and its turn)."""

    async def run() -> None:
        async with async_client(scoped.url, admin_token=ADMIN_TOKEN) as memory:
            await memory.remember(partition, "Keeps a kayak", metadata={"topic": "boats"})
            await memory.remember(partition, "Keeps a cat", metadata={"topic": "pets"})
            turn = await memory.turn(partition, None)
            await turn.remember("Keeps a canoe", metadata={"topic": "boats"})
            await turn.update(2, "Keeps two cats", metadata={"topic": "pets", "n": 2})
            boats = await memory.search(partition, "keeps", filter={"metadata": {
                "topic": "boats"}})
            assert sorted(e["n"] for e in boats["items"]) == [1, 3]
            pets = await turn.search("keeps", filter={"metadata": {"n": 2}})
            assert [e["n"] for e in pets["items"]] == [2]
            listed = [i["n"] async for i in memory.items(partition, filter={"metadata": {
                "topic": "boats"}})]
            assert listed == [1, 3]
            gone = await memory.forget_matching(partition, {"metadata": {"topic": "boats"}})
            assert (gone["forgotten"], (await memory.list(partition))["count"]) == ([1, 3], 1)

    asyncio.run(run())
