"""``SemmemStore`` against a real server: LangGraph's store cases (ported from langgraph's own
store tests: basic operations, namespaces listed by prefix, suffix, wildcards, depth and page,
namespace validation, search by query, filter and page, concurrent async batches, TTL), the
namespace mapping, and a LangGraph agent whose tools use the store."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.store.base import InvalidNamespaceError, PutOp

from semmem_client import Client
from semmem_client.langgraph import SemmemStore, namespace_of, partition_of

from conftest import PATH, serving
from fakes import ScriptedChatModel, calls
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


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


def test_list_namespaces_by_prefix_suffix_wildcard_depth_and_page(store: SemmemStore
                                                                  ) -> None:
    """The namespace listing, as LangGraph's own store lists it."""
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
                  ("a", "c", "f"), ("b", "a", "f"), ("users", "123"),
                  ("users", "456", "settings"), ("admin", "users", "789")]
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"})
                 for i, ns in enumerate(namespaces)])
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b")) == ab
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"),
                                                    ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"),
                                                                   ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == ab[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == ab[2:]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"),
                                                        ("b", "a", "f")]
    assert store.list_namespaces(prefix=("users", "*")) == [("users", "123"),
                                                            ("users", "456", "settings")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(max_depth=2) == sorted(
        {ns[:2] for ns in namespaces})
    assert store.list_namespaces() == sorted(namespaces)


def test_list_namespaces_empty_and_paged(store: SemmemStore) -> None:
    """No namespace in an empty store; twenty come five at a time, in order."""
    assert store.list_namespaces() == []
    store.batch([PutOp(("namespace", f"sub_{i:02d}"), "k", {"data": i}) for i in range(20)])
    for offset in (0, 5, 15):
        assert store.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == [
            ("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_invalid_namespaces_refused_by_put(store: SemmemStore) -> None:
    """``put`` refuses what LangGraph refuses; a ``PutOp`` in a batch is the caller's word."""
    doc = {"foo": "bar"}
    for ns in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "foo", doc)
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    got = store.get(("langgraph", "foo"), "bar")
    assert got is not None and got.value == doc
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None


def test_search_by_query_filter_and_page(store: SemmemStore) -> None:
    """Query searches rank with semmem's scores; filters (equality, ``$gt``…) apply with or
    without a query; an item put with ``index=False`` is not ranked; pages do not overlap;
    the prefix reaches nested namespaces."""
    docs = {"doc1": {"text": "red apple", "color": "red", "score": 4.5},
            "doc2": {"text": "red car", "color": "red", "score": 3.0},
            "doc3": {"text": "green apple", "color": "green", "score": 4.0},
            "doc4": {"text": "blue car", "color": "blue", "score": 3.5}}
    for key, value in docs.items():
        store.put(("test",), key, value)
    store.put(("test", "nested"), "doc5", {"text": "yellow apple", "color": "yellow"})
    store.put(("test",), "doc6", {"text": "red apple pie", "color": "red"}, index=False)

    apples = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in apples][:1] == ["doc1"] and {r.key for r in apples} == {
        "doc1", "doc2", "doc6"}
    assert all(r.score is not None for r in apples if r.key != "doc6")
    assert next(r for r in apples if r.key == "doc6").score is None
    cars = store.search(("test",), query="car", filter={"color": "red"})
    assert cars[0].key == "doc2"
    assert {r.key for r in store.search(("test",), query="anything",
                                        filter={"score": {"$gt": 3.2}})} == {
        "doc1", "doc3", "doc4"}
    assert [r.key for r in store.search(("test",), query="apple",
                                        filter={"score": {"$gte": 4.0}, "color": "green"})
            ] == ["doc3"]
    assert "doc5" in {r.key for r in store.search(("test",), query="apple")}
    assert [r.key for r in store.search(("test", "nested"))] == ["doc5"]
    first = store.search(("test",), query="apple", limit=2)
    second = store.search(("test",), query="apple", limit=2, offset=2)
    assert len(first) == len(second) == 2 and not {r.key for r in first} & {
        r.key for r in second}
    assert len(store.search(("test",), limit=10)) == 6
    for query in ("", None, "test " * 100, "test!@#$%^&*()"):
        assert len(store.search(("test", "nested"), query=query)) == 1


def test_update_changes_the_ranking(store: SemmemStore) -> None:
    """An item's new text is what its score reflects."""
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    before = store.search(("test",), query="Zany Xerxes")
    assert before[0].key == "doc1" and before[0].score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next(r for r in store.search(("test",), query="Zany Xerxes") if r.key == "doc1")
    assert (after.score or 0.0) < before[0].score
    dogs = next(r for r in store.search(("test",), query="new text about dogs")
                if r.key == "doc1")
    assert (dogs.score or 0.0) > (after.score or 0.0)


def test_concurrent_async_puts_deletes_and_searches(store: SemmemStore) -> None:
    """Puts, deletes and puts again of the same keys at once, then filtered searches: every
    key is there once, every result passes its filter."""
    colors, things = ["red", "blue", "green"], ["apple", "car", "house"]
    docs = [(f"doc{i}", {"text": f"{colors[i % 3]} {things[i % 3]}", "color": colors[i % 3],
                         "index": i}) for i in range(9)]

    async def run() -> list[Any]:
        await asyncio.gather(*(store.aput(("test",), k, v) for k, v in docs))
        await asyncio.gather(*(store.adelete(("test",), k) for k, _ in docs[:3]))
        await asyncio.gather(*(store.aput(("test",), k, v) for k, v in docs[:3]))
        return list(await asyncio.gather(
            store.asearch(("test",), query="apple", filter={"color": "red"}),
            store.asearch(("test",), query="house", filter={"index": {"$gt": 4}}),
            store.asearch(("test",), limit=20)))

    red, late, every = asyncio.run(run())
    assert red and all(r.value["color"] == "red" for r in red)
    assert late and all(r.value["index"] > 4 for r in late)
    assert sorted(r.key for r in every) == sorted(k for k, _ in docs)


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
    """``create_react_agent(..., store=SemmemStore(...))``: a tool saves a note through
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
    agent = create_react_agent(model, [save_note, find_notes], store=store)
    agent.invoke({"messages": [("user", "I am vegetarian")]})
    final = agent.invoke({"messages": [("user", "What is my diet?")]})
    assert final["messages"][-2].content == "Is vegetarian"
    assert store.client.recall("notes/alice", None).text == \
        '1. {"key":"n1","value":{"text":"Is vegetarian"}}'
