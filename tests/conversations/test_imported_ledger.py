"""In an imported store a forget reaches the ledger (issue 60, item 2): ``semmem export`` of a
session from one store and its import into another (another secret: its pieces' digests name
nothing there) give each message whose pieces all came this store's digest of it by its pieces,
so a whole-history re-send stores nothing again, and the model's forget, the forget of one piece
of two and a retention expiry each stay forgotten through the next re-send."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from semmem.conversations.ingest import Conversations
from semmem.embedding.fakes import HashingEmbedder
from semmem.lifecycle.sweep import sweep
from semmem.memory import Memory
from tests.support.chats import CHAT, S1, said, texts
from tests.support.memory import open_memory


@pytest.fixture
async def imported(memory: Memory, tmp_path: Path,
                   fake_embedder: HashingEmbedder) -> AsyncIterator[tuple[Memory, list[list[int]]]]:
    """The session exported from ``memory`` and imported into a new store; its numbers."""
    first = await Conversations(memory).ingest("p", S1, CHAT)
    records = [r async for r in memory.export("p")]
    other = await open_memory(tmp_path / "other", fake_embedder)
    assert other.store.secret != memory.store.secret
    report = await other.import_("p", records)
    assert report.imported == 5
    yield other, first["items"]
    await other.close()


async def test_forgets_in_an_imported_store_reach_the_ledger(
        imported: tuple[Memory, list[list[int]]]) -> None:
    other, items = imported
    talk = Conversations(other)
    assert (await talk.ingest("p", S1, CHAT))["items"] == items  # held: nothing stored again
    await other.forget("p", items[0][0], owner=False)  # the model's forget
    await other.forget("p", items[3][0], owner=False)  # one piece of two
    again = await talk.ingest("p", S1, CHAT)
    assert again["items"] == [[], items[1], items[2], items[3][1:]]
    assert (await other.snapshot("p")).hwm == 5  # nothing numbered anew
    assert CHAT[0].content not in await texts(other)
    assert CHAT[1].content in await texts(other)  # the positive control
    assert (await other.check("p")).problems == []


async def test_a_retention_expiry_in_an_imported_store_reaches_the_ledger(
        imported: tuple[Memory, list[list[int]]]) -> None:
    other, _ = imported
    talk = Conversations(other)
    await other.retention.set("p", "1s")
    deadline = time.monotonic() + 10
    while (await other.search("p", "Miso"))["count"]:
        assert time.monotonic() < deadline, "the pieces never expired"
        await asyncio.sleep(0.05)
    assert await sweep(other, ["p"]) == {"p": [1, 2, 3, 4, 5]}
    await other.retention.set("p", "never")
    assert (await talk.ingest("p", S1, CHAT))["items"] == [[], [], [], []]
    fresh = await talk.ingest("p", S1, [said("user", "Miso is two.", "2023-04-01T00:00:00Z")])
    assert fresh["items"] == [[6]]  # a message never said is stored (the control)
