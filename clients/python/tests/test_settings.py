"""A client's settings: the environment's defaults, a URL it can use, the deadline of one
call, the retry policy, and a clear error once closed."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import pytest

from semmem_client import Client, ClientClosed, Retry, Unavailable

from conftest import PATH, async_client
from proxy import Proxy
from tests.support.server import TOKEN, ServerProcess


def test_url_and_token_from_the_environment(server: ServerProcess, partition: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``SEMMEM_URL`` and ``SEMMEM_TOKEN`` are the defaults; arguments win over them."""
    monkeypatch.setenv("SEMMEM_URL", server.url)
    monkeypatch.setenv("SEMMEM_TOKEN", TOKEN)
    with Client(memory_path=PATH) as memory:
        assert memory.remember(partition, "Reads the env")["n"] == 1
    monkeypatch.setenv("SEMMEM_URL", "http://127.0.0.1:9")
    with Client(server.url, memory_path=PATH) as memory:
        assert memory.recall(partition, None).text == "1. Reads the env"
    monkeypatch.delenv("SEMMEM_URL")
    with pytest.raises(ValueError, match="SEMMEM_URL"):
        Client()


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "localhost:8080", "semmem.example.com",
                                 "ftp://host", "http://", "http://host/?q=1"])
def test_a_url_without_scheme_or_host_is_refused_at_once(url: str) -> None:
    """Not later as an obscure transport error: the message says what a URL looks like."""
    with pytest.raises(ValueError, match=r"http://|query"):
        Client(url, TOKEN)


def test_calls_after_close_raise_client_closed(server: ServerProcess, partition: str) -> None:
    """A closed client (sync or async) says so, instead of httpx's RuntimeError."""
    memory = Client(server.url, TOKEN, memory_path=PATH)
    memory.close()
    with pytest.raises(ClientClosed, match="closed"):
        memory.recall(partition, None)

    async def run() -> None:
        async with async_client(server.url) as closing:
            pass
        with pytest.raises(ClientClosed):
            await closing.remember(partition, "never")

    asyncio.run(run())


def test_timeout_is_the_deadline_of_one_call(proxy: Proxy, proxied: Client,
                                             partition: str) -> None:
    """``timeout=`` sets that call's ``deadlineAt`` (and bounds its attempts); the next call
    has the client's ``deadline_s`` again."""
    proxied.recall(partition, None, timeout=2.5)
    proxied.recall(partition, None)
    short, default = (_seconds_ahead(a.json()["deadlineAt"], a.at) for a in proxy.posts())
    assert 1.5 < short <= 2.6 and 9 < default <= 10.1
    proxy.plan = [(503, {}), (503, {})]
    started = time.monotonic()
    with pytest.raises(Unavailable):
        proxied.recall(partition, None, timeout=0.8)  # 250 ms, then 1 s would pass it
    assert time.monotonic() - started < 0.8 and len(proxy.posts()) == 4
    with pytest.raises(ValueError, match="positive"):
        proxied.recall(partition, None, timeout=0)


def test_retry_policy_sets_the_waits_and_their_number(proxy: Proxy, partition: str) -> None:
    """``Retry(delays_s=())`` makes one attempt; three short delays make four."""
    with Client(proxy.url, TOKEN, memory_path=PATH, retry=Retry(delays_s=())) as once:
        proxy.plan = [(503, {})]
        with pytest.raises(Unavailable):
            once.recall(partition, None)
    assert len(proxy.posts()) == 1
    with Client(proxy.url, TOKEN, memory_path=PATH,
                retry=Retry(delays_s=(0.01, 0.01, 0.01), retry_after=False)) as stubborn:
        proxy.plan = [(503, {"Retry-After": "5"})] * 3
        started = time.monotonic()
        assert stubborn.recall(partition, None).text == ""
    assert len(proxy.posts()) == 5 and time.monotonic() - started < 2
    with pytest.raises(ValueError):
        Retry(delays_s=(-1.0,))


def _seconds_ahead(deadline_at: str, sent_monotonic: float) -> float:
    at = datetime.fromisoformat(deadline_at.replace("Z", "+00:00")).timestamp()
    return at - (time.time() - (time.monotonic() - sent_monotonic))
