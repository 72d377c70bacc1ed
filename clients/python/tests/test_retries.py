"""The host's retry rule, through a proxy in front of a real server: lost replies replayed,
never written twice; what is retried, how often, after how long; sync and async alike."""

from __future__ import annotations

import asyncio

import pytest

from semmem_client import Client, Conflict, Overloaded, Unavailable

from conftest import PATH, async_client
from proxy import Proxy
from tests.support.server import TOKEN


def _same_bytes(proxy: Proxy) -> None:
    bodies = {a.body for a in proxy.posts()}
    assert len(bodies) == 1, "every attempt sends the same operation id and body"


def test_lost_reply_of_a_write_is_replayed_not_written_twice(proxy: Proxy, proxied: Client,
                                                             client: Client, partition: str
                                                             ) -> None:
    """The server commits, the proxy drops its reply; the retry gets the stored result."""
    proxy.plan = ["drop"]
    result = proxied.remember(partition, "Keeps bees on the roof")
    first, second = proxy.posts()
    assert (first.status, first.delivered, second.delivered) == (200, False, True)
    assert first.answer == second.answer  # the replay, byte for byte
    _same_bytes(proxy)
    assert (result["n"], result["count"]) == (1, 1)
    found = client.search(partition, "bees")
    assert [item["n"] for item in found["items"]] == [1] and found["count"] == 1


def test_lost_reply_replayed_async(proxy: Proxy, client: Client, partition: str) -> None:
    """The same through ``AsyncClient``: a lost update's reply, replayed once, applied once."""
    client.remember(partition, "Drinks tea")

    async def run() -> None:
        async with async_client(proxy.url) as memory:
            turn = await memory.turn(partition, None)
            proxy.plan = ["drop"]
            updated = await turn.update(1, "Drinks green tea")
            # Applied again, the edit would meet an item changed after the turn's cursor: 409.
            assert (updated["n"], updated["count"]) == (1, 1)

    asyncio.run(run())
    _recall, drop, retry = proxy.posts()
    assert (drop.status, drop.delivered) == (200, False)
    assert (drop.body, drop.answer) == (retry.body, retry.answer)
    recall = client.recall(partition, None)
    assert (recall.text, recall.sources[0].get("revision")) == ("1. Drinks green tea", "2")


def test_5xx_retried_twice_after_250ms_then_1s(proxy: Proxy, proxied: Client, partition: str
                                               ) -> None:
    """Two 503s without ``Retry-After``: retries after ≥ 250 ms and ≥ 1 s, then success."""
    proxy.plan = [(503, {}), (502, {})]
    assert proxied.remember(partition, "Runs on Sundays")["n"] == 1
    a, b, c = proxy.posts()
    assert b.at - a.at >= 0.25 and c.at - b.at >= 1.0
    assert (a.status, b.status, c.status) == (503, 502, 200)
    _same_bytes(proxy)


def test_third_failure_raises_it(proxy: Proxy, proxied: Client, partition: str) -> None:
    """At most two retries: a third 503 is raised, as ``Unavailable`` with its status."""
    proxy.plan = [(503, {}), (503, {}), (503, {}), "forward"]
    with pytest.raises(Unavailable) as failed:
        proxied.recall(partition, None)
    assert (len(proxy.posts()), failed.value.status) == (3, 503)


def test_retry_after_honoured_when_it_fits_the_deadline(proxy: Proxy, proxied: Client,
                                                        partition: str) -> None:
    """``Retry-After: 1`` replaces the 250 ms wait; one past the deadline does not."""
    proxy.plan = [(429, {"Retry-After": "1"})]
    proxied.recall(partition, None)
    a, b = proxy.posts()
    assert b.at - a.at >= 1.0
    with Client(proxy.url, TOKEN, memory_path=PATH, deadline_s=3) as short:
        proxy.plan = [(429, {"Retry-After": "30"})]
        short.recall(partition, None)
    c, d = proxy.posts()[2:]
    assert 0.25 <= d.at - c.at < 3


def test_408_is_retried_but_other_4xx_are_final(proxy: Proxy, proxied: Client,
                                                partition: str) -> None:
    """408 is retried; a 409 from the server is raised after one attempt."""
    proxy.plan = [(408, {})]
    proxied.remember(partition, "Speaks Basque")
    assert len(proxy.posts()) == 2
    turn = proxied.turn(partition, None)
    proxied.update(partition, 1, "Speaks Basque and Catalan")
    with pytest.raises(Conflict):
        turn.forget(1)
    assert [a.status for a in proxy.posts()[-1:]] == [409]
    assert len(proxy.posts()) == 5  # 2 remember, recall, update, one forget


def test_overloaded_after_retries_async(proxy: Proxy, partition: str) -> None:
    """Async: three 429s raise ``Overloaded``; the deadline bounds every attempt."""
    proxy.plan = [(429, {"Retry-After": "0"})] * 3

    async def run() -> None:
        async with async_client(proxy.url) as memory:
            with pytest.raises(Overloaded):
                await memory.search(partition, "anything")

    asyncio.run(run())
    assert len(proxy.posts()) == 3
