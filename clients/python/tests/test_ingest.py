"""``ingest`` (sync and async) against a real server: a session's messages stored as pieces,
a lost reply replayed through the proxy (never stored twice), appends, and the owner's
sessions (listed, opened, forgotten)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from semmem_client import Client, IdempotencyMismatch, InvalidArguments, NotFound

from conftest import async_client
from proxy import Proxy
from tests.support.server import ServerProcess

CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "I just got an Air Fryer. It makes crispy chickpeas.",
     "at": "2023-05-20T10:00:00Z"},
    {"role": "assistant", "content": "Enjoy the air fryer!",
     "at": datetime(2023, 5, 20, 10, 1, tzinfo=UTC)}]


def test_ingest_stores_pieces_that_search_shows_with_their_session(client: Client,
                                                                   partition: str) -> None:
    result = client.ingest(partition, "chat-1", CHAT)
    assert result["status"] == "stored" and result["sessionId"] == "chat-1"
    assert result["items"] == [[1], [2]] and result["count"] == 2
    found = client.search(partition, "air fryer")
    by_n = {e["n"]: e for e in found["items"]}
    assert dict(by_n[2]) | {"sessionId": "chat-1", "role": "assistant",
                            "at": "2023-05-20T10:01:00.000Z"} == by_n[2]
    again = client.ingest(partition, "chat-1", [*CHAT, {"role": "user", "content": "Thanks"}])
    assert again["items"] == [[1], [2], [3]] and again["count"] == 3
    with pytest.raises(InvalidArguments):
        client.ingest(partition, "chat-1", [{"role": " ", "content": "Hello"}])


def test_a_lost_reply_is_replayed_not_stored_twice(proxy: Proxy, proxied: Client,
                                                    client: Client, partition: str) -> None:
    proxy.plan = ["drop"]
    result = proxied.ingest(partition, "chat-1", CHAT, operation_id="ingest-once")
    first, second = proxy.posts()
    assert (first.status, first.delivered, second.delivered) == (200, False, True)
    assert first.answer == second.answer and first.body == second.body
    assert result["count"] == 2
    with pytest.raises(IdempotencyMismatch):
        client.ingest(partition, "chat-1", CHAT[:1], operation_id="ingest-once")


def test_async_ingest_and_the_owners_sessions(server: ServerProcess, owner: Client,
                                             partition: str) -> None:
    async def run() -> None:
        async with async_client(server.url) as memory:
            done = await asyncio.gather(
                memory.ingest(partition, "a", CHAT), memory.ingest(partition, "b", CHAT[:1]))
            assert [len(r["items"]) for r in done] == [2, 1]

    asyncio.run(run())
    assert owner.search(partition, "air fryer")["count"] == 3
    listed = owner.sessions(partition)
    assert sorted((s["sessionId"], s["messages"]) for s in listed) == [("a", 2), ("b", 1)]
    opened = owner.session(partition, "a")
    assert [m["role"] for m in opened["messages"]] == ["user", "assistant"]
    gone = owner.forget_session(partition, "a")
    assert gone["count"] == 2
    with pytest.raises(NotFound):
        owner.session(partition, "a")
    assert [s["sessionId"] for s in owner.sessions(partition)] == ["b"]
