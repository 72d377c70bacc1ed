"""``SemmemStore`` against a real server, beyond LangGraph's own cases (test_lg_store_*.py):
the namespace mapping, the admin token, ``created_at`` kept by an update, LangGraph's filter
semantics, the native async store, TTL as the fact's expiry, and an agent whose tools use the
store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.store.base.batch import AsyncBatchedBaseStore

from semmem_client import AsyncClient, Client
from semmem_client.langgraph import AsyncSemmemStore, SemmemStore, namespace_of, partition_of

from conftest import PATH, serving
from fakes import ScriptedChatModel, calls
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of this module's own: namespaces are listed across the whole store."""
    with serving(tmp_path_factory.mktemp("store") / "db") as proc:
        yield proc


@pytest.fixture
def store(own_server: ServerProcess) -> Iterator[SemmemStore]:
    """An empty store: every partition of the module's server deleted first."""
    with Client(own_server.url, TOKEN, admin_token=ADMIN_TOKEN, memory_path=PATH) as client:
        for name in client.partitions(limit=1000)["partitions"]:
            client.delete_partition(name)
        yield SemmemStore(client)


def test_namespace_mapping_is_reversible_and_bounded() -> None:
    """Labels with ``/`` and ``%`` come back as they were; ``("alice",)`` is ``alice``."""
    for ns in [("alice",), ("users", "alice"), ("a/b", "50%", "%2F", "c")]:
        assert namespace_of(partition_of(ns)) == ns
    assert partition_of(("users", "alice")) == "users/alice"
    assert partition_of(("a/b",)) == "a%2Fb"
    assert len(partition_of(("é" * 512,)).encode()) == 1024
    with pytest.raises(ValueError, match="1024"):
        partition_of(("é" * 512, "x"))


def test_store_needs_an_admin_token(own_server: ServerProcess) -> None:
    """Reading items by key is the admin API's: without the token the store says so."""
    with Client(own_server.url, TOKEN, memory_path=PATH) as client, \
            pytest.raises(ValueError, match="admin_token"):
        SemmemStore(client)


def test_put_get_update_delete(store: SemmemStore) -> None:
    """A value comes back as put; an update keeps ``created_at`` and moves ``updated_at``;
    a delete makes ``get`` answer ``None``; another namespace never sees it."""
    ns = ("users", "alice")
    assert store.get(ns, "units") is None
    store.put(ns, "units", {"text": "Prefers metric units", "since": 2019})
    first = store.get(ns, "units")
    assert first is not None and first.value == {"text": "Prefers metric units", "since": 2019}
    assert (first.key, first.namespace) == ("units", ns)
    store.put(ns, "units", {"text": "Prefers SI units"})
    second = store.get(ns, "units")
    assert second is not None and second.value == {"text": "Prefers SI units"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert store.get(("users", "bob"), "units") is None
    store.delete(ns, "units")
    assert store.get(ns, "units") is None
    store.delete(ns, "units")  # deleting what is gone is fine


def test_filters_compare_as_langgraph_does(store: SemmemStore) -> None:
    """Nested objects match by containment; an operator LangGraph does not have is refused
    (it answered ``[]``: a typo read as "no match")."""
    store.put(("docs",), "a", {"user": {"name": "ann", "age": 30}, "tags": ["x"]})
    store.put(("docs",), "b", {"user": {"name": "bob", "age": 40}, "tags": ["y"]})
    assert [r.key for r in store.search(("docs",), filter={"user": {"name": "ann"}})] == ["a"]
    assert [r.key for r in store.search(("docs",),
                                        filter={"user": {"age": {"$gte": 35}}})] == ["b"]
    with pytest.raises(ValueError, match=r"\$in"):
        store.search(("docs",), filter={"tags": {"$in": ["x"]}})


def test_async_client_store_is_natively_async(own_server: ServerProcess) -> None:
    """``SemmemStore(AsyncClient(...))`` (it raised ``TypeError: 'coroutine' object is not
    iterable``) is an ``AsyncBatchedBaseStore`` whose calls are awaited on the loop: no
    worker thread is started; a key put twice at once is written once, the last value."""

    async def run() -> None:
        async with AsyncClient(own_server.url, TOKEN, admin_token=ADMIN_TOKEN,
                               memory_path=PATH) as client:
            store = SemmemStore(client)
            assert isinstance(store, AsyncSemmemStore)
            assert isinstance(store, AsyncBatchedBaseStore)
            await asyncio.gather(store.aput(("async",), "k", {"v": 1}),
                                 store.aput(("async",), "k", {"v": 2}))
            got = await store.aget(("async",), "k")
            assert got is not None and got.value == {"v": 2}
            assert [r.key for r in await store.asearch(("async",), query="v")] == ["k"]
            assert not [t.name for t in threading.enumerate() if t.name.startswith("asyncio_")]

    asyncio.run(run())


def test_ttl_is_the_facts_expiry_and_a_read_refreshes_it(store: SemmemStore) -> None:
    """``ttl`` minutes become ``expiresAt``; ``get`` (refresh on read) moves it forward."""
    store.put(("users", "alice"), "trip", {"text": "In Paris this week"}, ttl=60)
    fact = store.client.get("users/alice", 1)
    assert fact is not None
    expires = datetime.fromisoformat(fact["expiresAt"].replace("Z", "+00:00"))
    assert abs(expires - (datetime.now(UTC) + timedelta(minutes=60))) < timedelta(seconds=30)
    assert store.get(("users", "alice"), "trip", refresh_ttl=True) is not None
    refreshed = store.client.get("users/alice", 1)
    assert refreshed is not None and refreshed["expiresAt"] >= fact["expiresAt"]


def test_a_langgraph_agent_uses_the_store(store: SemmemStore) -> None:
    """``create_agent(..., store=SemmemStore(...))`` (LangChain 1.x's successor of
    ``create_react_agent``) with a scripted model: a tool saves a note through
    ``get_store()`` in one thread; in another, a tool finds it by meaning."""

    @tool
    def save_note(text: str) -> str:
        """Save a note about the user."""
        get_store().put(("notes", "alice"), "n1", {"text": text})
        return "saved"

    @tool
    def find_notes(query: str) -> str:
        """Find notes about the user."""
        return "; ".join(i.value["text"] for i in get_store().search(("notes", "alice"),
                                                                       query=query))

    model = ScriptedChatModel(script=[
        calls("save_note", {"text": "Is vegetarian"}, "c1"), AIMessage("Saved."),
        calls("find_notes", {"query": "diet"}, "c2"), AIMessage("You are vegetarian."),
    ])
    agent: Any = create_agent(model, [save_note, find_notes], store=store)
    agent.invoke({"messages": [("user", "I am vegetarian")]})
    final = agent.invoke({"messages": [("user", "What is my diet?")]})
    assert final["messages"][-2].content == "Is vegetarian"
    assert store.client.recall("notes/alice", None).text == \
        '1. {"key":"n1","value":{"text":"Is vegetarian"}}'
