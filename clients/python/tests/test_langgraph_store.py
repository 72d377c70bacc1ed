"""``SemmemStore`` against a real server, beyond LangGraph's own cases (test_lg_store_*.py):
the namespace mapping, no admin token needed, ``created_at`` kept by an update, LangGraph's
filter semantics, the native async store (concurrent puts of one key), TTL as the item's
expiry, a 64 KB value, keys that differ in case, items the model's tools cannot forge or see,
and an agent whose tools use the store."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
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


def test_store_needs_no_admin_token(own_server: ServerProcess) -> None:
    """Store items are the provider token's (``POST /store``): no admin token is needed."""
    with Client(own_server.url, TOKEN, memory_path=PATH) as client:
        store = SemmemStore(client)
        store.put(("plain",), "k", {"v": 1})
        got = store.get(("plain",), "k")
        assert got is not None and got.value == {"v": 1}


def test_a_64_kb_value_and_keys_differing_in_case(store: SemmemStore) -> None:
    """A 64 KB document is stored whole (over 2,000 characters was refused); "Theme" and
    "theme" are two items (keys compare exactly)."""
    doc = {"profile": "x" * 65_536, "name": "Ann"}
    store.put(("users", "ann"), "doc", doc)
    got = store.get(("users", "ann"), "doc")
    assert got is not None and got.value == doc
    store.put(("users", "ann"), "Theme", {"mode": "dark"})
    store.put(("users", "ann"), "theme", {"mode": "light"})
    upper, lower = store.get(("users", "ann"), "Theme"), store.get(("users", "ann"), "theme")
    assert upper is not None and upper.value == {"mode": "dark"}
    assert lower is not None and lower.value == {"mode": "light"}


def test_the_model_cannot_forge_or_see_store_items(store: SemmemStore) -> None:
    """The model's tools (the LangChain adapter's, on the user's partition ``alice``, where
    the store's ``("alice",)`` namespace lives): a ``remember`` of the item's JSON leaves
    ``get`` as the application put it; recall and search show the model's fact, never the
    item; the item's numbers cannot be forgotten or updated by the model."""
    from semmem_client.langchain import LangChainMemory

    store.put(("alice",), "profile", {"diet": "vegan"})
    tools = {t.name: t for t in LangChainMemory(store.client, "alice").tools()}
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    forged = '{"key":"profile","value":{"diet":"carnivore"}}'
    answer = json.loads(tools["memory_remember"].invoke({"text": forged}, config))
    assert "existing" not in answer  # a new fact of its own: the item is no duplicate
    got = store.get(("alice",), "profile")
    assert got is not None and got.value == {"diet": "vegan"}
    found = json.loads(tools["memory_search"].invoke({"query": "diet vegan carnivore"}, config))
    assert [i["text"] for i in found["items"]] == [forged]  # positive control: it sees facts
    recalled = tools["memory_recall"].invoke({"text": "diet"}, config)
    assert "vegan" not in recalled and "carnivore" in recalled
    for n in range(1, answer["n"]):  # the item's numbers: refused, never its value
        gone = json.loads(tools["memory_forget"].invoke({"n": n}, config))
        assert gone["error"]["code"] in ("forbidden", "not_found")
        edited = json.loads(tools["memory_update"].invoke(
            {"n": n, "text": "Alice eats meat"}, config))
        assert edited["error"]["code"] in ("forbidden", "not_found")
    got = store.get(("alice",), "profile")
    assert got is not None and got.value == {"diet": "vegan"}


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
            # concurrent puts of one key from separate batches (it raised "already holds
            # this text under another key"): each lands, one item remains
            other = SemmemStore(client)
            await asyncio.gather(*(s.aput(("async",), "same", {"v": i, "pad": "x" * i})
                                   for i, s in enumerate([store, other] * 4)))
            got = await store.aget(("async",), "same")
            assert got is not None and got.value["v"] in range(8)
            assert sorted(r.key for r in await store.asearch(("async",), query="v")) == [
                "k", "same"]  # one item for the key put eight times at once
            assert not [t.name for t in threading.enumerate() if t.name.startswith("asyncio_")]

    asyncio.run(run())


def test_ttl_is_the_items_expiry_and_a_read_refreshes_it(store: SemmemStore) -> None:
    """``ttl`` minutes become ``expiresAt``, written with the item; ``get`` (refresh on read)
    moves it forward and leaves ``updated_at`` as it was."""
    read = {"op": "get", "namespace": ["users", "alice"], "key": "trip"}
    store.put(("users", "alice"), "trip", {"text": "In Paris this week"}, ttl=60)
    first = store.client.store([read])[0]
    expires = datetime.fromisoformat(first["expiresAt"].replace("Z", "+00:00"))
    assert abs(expires - (datetime.now(UTC) + timedelta(minutes=60))) < timedelta(seconds=30)
    assert store.get(("users", "alice"), "trip", refresh_ttl=True) is not None
    refreshed = store.client.store([read])[0]
    assert refreshed["expiresAt"] > first["expiresAt"]
    assert refreshed["updatedAt"] == first["updatedAt"]


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
    assert store.client.recall("notes/alice", None).text == ""  # the model never sees it
