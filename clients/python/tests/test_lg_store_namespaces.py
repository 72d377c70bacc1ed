"""LangGraph's store cases, part 2: namespaces — listed, matched, scoped and validated.

Ported from LangGraph's own store tests (https://github.com/langchain-ai/langgraph, commit
f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f; MIT licence, Copyright (c) 2024 LangChain, Inc.):
``libs/checkpoint/tests/test_store.py`` (test_list_namespaces_basic, _with_wildcards,
_pagination, _max_depth, _no_conditions, _empty_store, test_cannot_put_empty_namespace) and
``libs/checkpoint-sqlite/tests/test_store.py`` (test_list_namespaces_operations,
test_search_namespace_segment_boundary, test_search_namespace_wildcard_chars_are_literal,
test_search_namespace_is_case_sensitive, test_list_namespaces_segment_boundary,
test_search_empty_prefix_is_unconstrained, test_namespace_labels_with_trailing_newline,
test_list_namespaces_metacharacter_labels; postgres's same-named cases are subsets).
Each runs on ``InMemoryStore`` and on ``SemmemStore`` (``stores`` fixture, conftest.py), as
LangGraph wrote it: a namespace label may hold a newline there as in LangGraph's stores (a
namespace is the application's key, never a line a model reads).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp

from lgport import Stores

NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
              ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
              ("admin", "users", "789")]


def test_list_namespaces_basic(stores: Stores) -> None:
    store = stores.make(vector=False)
    for i, ns in enumerate(NAMESPACES):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})

    assert sorted(store.list_namespaces(prefix=("a", "b"))) == sorted(
        [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")])
    assert sorted(store.list_namespaces(suffix=("f",))) == sorted(
        [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")])
    assert sorted(store.list_namespaces(prefix=("a",), suffix=("f",))) == sorted(
        [("a", "b", "f"), ("a", "c", "f")])
    assert sorted(store.list_namespaces(prefix=("a", "b"), max_depth=3)) == sorted(
        [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")])
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"), ("a", "b", "f")]
    assert sorted(store.list_namespaces(prefix=("a", "*", "f"))) == sorted(
        [("a", "b", "f"), ("a", "c", "f")])
    assert sorted(store.list_namespaces(suffix=("*", "f"))) == sorted(
        [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")])
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(stores: Stores) -> None:
    store = stores.make(vector=False)
    namespaces = [("users", "123"), ("users", "456"), ("users", "789", "settings"),
                  ("admin", "users", "789"), ("guests", "123"), ("guests", "456", "preferences")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(prefix=("users", "*"))) == sorted(
        [("users", "123"), ("users", "456"), ("users", "789", "settings")])
    assert store.list_namespaces(suffix=("*", "preferences")) == [
        ("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []


def test_list_namespaces_pagination(stores: Stores) -> None:
    store = stores.make(vector=False)
    for i in range(20):
        store.put(namespace=("namespace", f"sub_{i:02d}"), key=f"id_{i:02d}",
                  value={"data": f"value_{i:02d}"})
    for offset in (0, 5, 15):
        assert store.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == [
            ("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)]


def test_list_namespaces_max_depth(stores: Stores) -> None:
    store = stores.make(vector=False)
    namespaces = [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"),
                  ("h", "i", "j", "k")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces(max_depth=2)) == sorted(
        [("a", "b"), ("a", "g"), ("h", "i")])


def test_list_namespaces_no_conditions(stores: Stores) -> None:
    store = stores.make(vector=False)
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        store.put(namespace=ns, key=f"id_{i}", value={"data": f"value_{i:02d}"})
    assert sorted(store.list_namespaces()) == sorted(namespaces)


def test_list_namespaces_empty_store(stores: Stores) -> None:
    assert stores.make(vector=False).list_namespaces() == []


def test_cannot_put_empty_namespace(stores: Stores) -> None:
    """langgraph's case; its second half (on ``MockAsyncBatchedStore``) runs on the store's own
    async methods in one loop."""
    doc = {"foo": "bar"}

    async def run() -> None:
        store = stores.amake(vector=False)
        try:
            for ns in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
                with pytest.raises(InvalidNamespaceError):
                    await store.aput(ns, "foo" if ns[:1] != ("langgraph",) else "bar", doc)
            await store.aput(("foo", "langgraph", "foo"), "bar", doc)
            got = await store.aget(("foo", "langgraph", "foo"), "bar")
            assert got is not None and got.value == doc
            assert (await store.asearch(("foo", "langgraph", "foo"), query="bar"))[0].value == doc
            await store.adelete(("foo", "langgraph", "foo"), "bar")
            assert (await store.aget(("foo", "langgraph", "foo"), "bar")) is None
            await store.abatch([PutOp(("langgraph", "foo"), "bar", doc)])
            got = await store.aget(("langgraph", "foo"), "bar")
            assert got is not None and got.value == doc
            assert (await store.asearch(("langgraph", "foo")))[0].value == doc
            await store.adelete(("langgraph", "foo"), "bar")
            assert (await store.aget(("langgraph", "foo"), "bar")) is None
            await store.abatch([PutOp(("valid", "namespace"), "key", doc)])
            got = await store.aget(("valid", "namespace"), "key")
            assert got is not None and got.value == doc
            assert (await store.asearch(("valid", "namespace")))[0].value == doc
            await store.adelete(("valid", "namespace"), "key")
            assert (await store.aget(("valid", "namespace"), "key")) is None
        finally:
            await stores.aclose()

    store = stores.make(vector=False)
    for ns in [(), ("the", "thing.about"), ("some", "fun", "")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "foo", doc)
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "foo"), "bar", doc)
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    got = store.get(("foo", "langgraph", "foo"), "bar")
    assert got is not None and got.value == doc
    assert store.search(("foo", "langgraph", "foo"), query="bar")[0].value == doc
    store.delete(("foo", "langgraph", "foo"), "bar")
    assert store.get(("foo", "langgraph", "foo"), "bar") is None
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    got = store.get(("langgraph", "foo"), "bar")
    assert got is not None and got.value == doc
    assert store.search(("langgraph", "foo"))[0].value == doc
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None
    asyncio.run(run())


def test_list_namespaces_operations(stores: Stores) -> None:
    store = stores.make(fields=["key0", "key1", "key3"])
    p = str(uuid.uuid4())
    test_namespaces = [
        (p, "test", "documents", "public", p),
        (p, "test", "documents", "private", p),
        (p, "test", "images", "public", p),
        (p, "test", "images", "private", p),
        (p, "prod", "documents", "public", p),
        (p, "prod", "documents", "some", "nesting", "public", p),
        (p, "prod", "documents", "private", p),
    ]
    for namespace in test_namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})

    prefix_result = store.list_namespaces(prefix=(p, "test"))
    assert len(prefix_result) == 4
    assert all(ns[1] == "test" for ns in prefix_result)
    specific = store.list_namespaces(prefix=(p, "test", "documents"))
    assert len(specific) == 2
    assert all(ns[1:3] == ("test", "documents") for ns in specific)
    suffix_result = store.list_namespaces(suffix=("public", p))
    assert len(suffix_result) == 4
    assert all(ns[-2] == "public" for ns in suffix_result)
    both = store.list_namespaces(prefix=(p, "test"), suffix=("public", p))
    assert len(both) == 2
    assert all(ns[1] == "test" and ns[-2] == "public" for ns in both)
    wildcard_prefix = store.list_namespaces(prefix=(p, "*", "documents"))
    assert len(wildcard_prefix) == 5
    assert all(ns[2] == "documents" for ns in wildcard_prefix)
    wildcard_suffix = store.list_namespaces(suffix=("*", "public", p))
    assert len(wildcard_suffix) == 4
    assert all(ns[-2] == "public" for ns in wildcard_suffix)
    single = store.list_namespaces(suffix=("some", "*", "public", p))
    assert single == [(p, "prod", "documents", "some", "nesting", "public", p)]
    assert all(len(ns) <= 3 for ns in store.list_namespaces(max_depth=3))
    depth4 = store.list_namespaces(max_depth=4, prefix=(p, "*", "documents"))
    assert len(set(depth4)) == len(depth4) == 5
    assert len(store.list_namespaces(prefix=(p,), limit=3)) == 3
    assert len(store.list_namespaces(prefix=(p,), offset=3)) == len(test_namespaces) - 3
    everything = store.list_namespaces(prefix=(p,))
    assert len(everything) == len(test_namespaces)
    assert set(everything) == set(test_namespaces)
    for namespace in test_namespaces:
        store.delete(namespace, "dummy")


def test_search_namespace_segment_boundary(stores: Stores) -> None:
    store = stores.make(vector=False)
    for namespace in [("foo",), ("foo", "child"), ("foo", "child", "deep"), ("foobar",),
                      ("foobar", "baz"), ("foo2",)]:
        store.put(namespace, "k", {"v": 1})

    def found(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert found(("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert found(("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert found(("foo", "child")) == {("foo", "child"), ("foo", "child", "deep")}  # postgres
    assert found(("foo2",)) == {("foo2",)}
    assert found(("fo",)) == set()


def test_search_namespace_wildcard_chars_are_literal(stores: Stores) -> None:
    store = stores.make(vector=False)
    for namespace in [("user_1",), ("user_1", "child"), ("userX1",), ("a%b",), ("axxb",),
                      ("star*",), ("starX",)]:
        store.put(namespace, "k", {"v": 1})

    def found(prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
        return {item.namespace for item in store.search(prefix, limit=100)}

    assert found(("user_1",)) == {("user_1",), ("user_1", "child")}
    assert found(("a%b",)) == {("a%b",)}
    assert found(("star*",)) == {("star*",)}


def test_search_namespace_is_case_sensitive(stores: Stores) -> None:
    store = stores.make(vector=False)
    store.put(("Foo",), "k", {"v": "upper"})
    store.put(("foo",), "k", {"v": "lower"})
    assert {item.namespace for item in store.search(("foo",), limit=100)} == {("foo",)}
    assert {item.namespace for item in store.search(("Foo",), limit=100)} == {("Foo",)}


def test_list_namespaces_segment_boundary(stores: Stores) -> None:
    store = stores.make(vector=False)
    for namespace in [("foo",), ("foo", "child"), ("foobar",), ("foobar", "baz"),
                      ("uid", "users", "alice"), ("uid", "users", "malice"),
                      ("uid", "a", "b", "alice")]:
        store.put(namespace, "k", {"v": 1})
    assert set(store.list_namespaces(prefix=("foo",), limit=100)) == {("foo",), ("foo", "child")}
    assert set(store.list_namespaces(suffix=("alice",), limit=100)) == {
        ("uid", "users", "alice"), ("uid", "a", "b", "alice")}
    assert set(store.list_namespaces(prefix=("uid", "*", "alice"), limit=100)) == {
        ("uid", "users", "alice")}
    assert set(store.list_namespaces(prefix=("uid",), limit=100)) == {
        ("uid", "users", "alice"), ("uid", "users", "malice"), ("uid", "a", "b", "alice")}


def test_search_empty_prefix_is_unconstrained(stores: Stores) -> None:
    store = stores.make(vector=False)
    for namespace in [("a",), ("b", "c"), ("d", "e", "f")]:
        store.put(namespace, "k", {"v": 1})
    assert {item.namespace for item in store.search((), limit=100)} == {
        ("a",), ("b", "c"), ("d", "e", "f")}


def test_namespace_labels_with_trailing_newline(stores: Stores) -> None:
    store = stores.make(vector=False)
    store.put(("users", "alice"), "k", {"v": 1})
    store.put(("users", "alice\n"), "k", {"v": 2})
    assert set(store.list_namespaces(suffix=("alice",), limit=100)) == {("users", "alice")}
    assert set(store.list_namespaces(prefix=("users", "alice"), limit=100)) == {
        ("users", "alice")}


def test_list_namespaces_metacharacter_labels(stores: Stores) -> None:
    store = stores.make(vector=False)
    pairs = [("star*", "starX"), ("q?m", "qXm"), ("br[ack]et", "brXacXket"),
             ("user_1", "userX1"), ("a%b", "axxb"), ("plus+", "plusX")]
    for label, decoy in pairs:
        store.put((label,), "k", {"v": 1})
        store.put((decoy,), "k", {"v": 1})
        store.put((label, "child"), "k", {"v": 1})
    for label, decoy in pairs:
        found = set(store.list_namespaces(prefix=(label,), limit=100))
        assert found == {(label,), (label, "child")}
        assert (decoy,) not in found
        assert set(store.list_namespaces(prefix=(label, "child"), limit=100)) == {
            (label, "child")}
