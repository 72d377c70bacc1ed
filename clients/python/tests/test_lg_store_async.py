"""LangGraph's store cases, part 5: the async stores' suites and TTL.

Ported from LangGraph's own store tests (https://github.com/langchain-ai/langgraph, commit
f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f; MIT licence, Copyright (c) 2024 LangChain, Inc.):
``libs/checkpoint-postgres/tests/test_async_store.py`` and
``libs/checkpoint-sqlite/tests/test_async_store.py`` (test_no_running_loop, test_large_batches,
test_large_batches_async, test_abatch_order, test_batch_get_ops / _put_ops / _search_ops /
_list_namespaces_ops, test_basic_store_ops, test_async_namespace_segment_boundary) and
``libs/checkpoint-postgres/tests/test_store.py`` (test_store_ttl,
test_omit_expired_filters_read_paths, test_omit_expired_refresh_ttl_only_refreshes_live_rows,
test_omit_expired_search_pagination).

Async cases build the store inside their loop (``stores.amake()``: ``SemmemStore`` over an
``AsyncClient``). Cases only an async store or a TTL store can pass run on ``SemmemStore``
alone (``semmem_stores``: ``InMemoryStore`` has no TTL and no loop of its own). Scaled for a
real server and a CI budget: test_large_batches 4×20 rounds of six calls (langgraph: 10×100),
test_large_batches_async 4×25 (langgraph: 10×100 on SQLite, 10×1,000 on Postgres). Where
Postgres backdates a row with SQL, the port sets the item's expiry in the past through the
owner's API (``lgport.expire_now``); ordering by ``updated_at`` comes from real puts in order.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, PutOp, SearchOp

from lgport import Stores, expire_now, expires_at

TTL_SECONDS = 6  # postgres's
TTL_MINUTES = TTL_SECONDS / 60
TTL_CONFIG = {"default_ttl": TTL_MINUTES, "refresh_on_read": True,
              "sweep_interval_minutes": TTL_MINUTES / 2}


def _run(stores: Stores, body: Any, **options: Any) -> None:
    async def main() -> None:
        store = stores.amake(**options)
        try:
            await body(store)
        finally:
            await stores.aclose()

    asyncio.run(main())


def test_no_running_loop(semmem_stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        with pytest.raises(asyncio.InvalidStateError):
            store.put(("foo", "bar"), "baz", {"val": "baz"})
        with pytest.raises(asyncio.InvalidStateError):
            store.get(("foo", "bar"), "baz")
        with pytest.raises(asyncio.InvalidStateError):
            store.delete(("foo", "bar"), "baz")
        with pytest.raises(asyncio.InvalidStateError):
            store.search(("foo", "bar"))
        with pytest.raises(asyncio.InvalidStateError):
            store.list_namespaces(prefix=("foo",))
        with pytest.raises(asyncio.InvalidStateError):
            store.batch([PutOp(namespace=("foo", "bar"), key="baz", value={"val": "baz"})])
        with ThreadPoolExecutor(max_workers=1) as executor:
            future = executor.submit(store.put, ("foo", "bar"), "baz", {"val": "baz"})
            await asyncio.wrap_future(future)  # langgraph's: its result is None
            got = await asyncio.wrap_future(executor.submit(store.get, ("foo", "bar"), "baz"))
            assert got is not None and got.value == {"val": "baz"}
            await asyncio.wrap_future(executor.submit(store.list_namespaces, prefix=("foo",)))

    _run(semmem_stores, body)


def test_large_batches(stores: Stores) -> None:
    n, m = 20, 4

    async def body(store: BaseStore) -> None:
        with ThreadPoolExecutor(max_workers=10) as executor:
            futures: list[Future[Any]] = []
            for r in range(m):
                ns = ("test", "foo", "bar", "baz", str(r % 2))
                for i in range(n):
                    futures += [
                        executor.submit(store.put, ns, f"key{i}", value={"foo": "bar" + str(i)}),
                        executor.submit(store.get, ns, f"key{i}"),
                        executor.submit(store.list_namespaces, prefix=None, max_depth=r + 1),
                        executor.submit(store.search, ("test",)),
                        executor.submit(store.put, ns, f"key{i}", value={"foo": "bar" + str(i)}),
                        executor.submit(store.put, ns, f"key{i}", None),  # type: ignore[arg-type]
                    ]
            results = await asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
        assert len(results) == m * n * 6

    _run(stores, body)


def test_large_batches_async(stores: Stores) -> None:
    n, m = 25, 4

    async def body(store: BaseStore) -> None:
        coros: list[Any] = []
        for r in range(m):
            ns = ("test", "foo", "bar", "baz", str(r % 2))
            for i in range(n):
                coros += [store.aput(ns, f"key{i}", value={"foo": "bar" + str(i)}),
                          store.aget(ns, f"key{i}"),
                          store.alist_namespaces(prefix=None, max_depth=r + 1),
                          store.asearch(("test",)),
                          store.aput(ns, f"key{i}", value={"foo": "bar" + str(i)}),
                          store.adelete(ns, f"key{i}")]
        results = await asyncio.gather(*coros)
        assert len(results) == m * n * 6

    _run(stores, body)


def test_abatch_order(stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        await store.aput(("test", "foo"), "key1", {"data": "value1"})
        await store.aput(("test", "bar"), "key2", {"data": "value2"})
        results = await store.abatch([
            GetOp(namespace=("test", "foo"), key="key1"),
            PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
            SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(namespace=("test",), key="key3"),
        ])
        assert len(results) == 5
        assert isinstance(results[0], Item)
        assert results[0].value == {"data": "value1"}
        assert results[0].key == "key1"
        assert results[1] is None
        assert isinstance(results[2], list) and len(results[2]) == 1
        assert isinstance(results[3], list)
        assert ("test", "foo") in results[3] and ("test", "bar") in results[3]
        assert results[4] is None

        reordered = await store.abatch([
            SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
            GetOp(namespace=("test", "bar"), key="key2"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
            PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
            GetOp(namespace=("test", "foo"), key="key1"),
        ])
        assert len(reordered) == 5
        assert isinstance(reordered[0], list) and len(reordered[0]) == 2
        assert isinstance(reordered[1], Item)
        assert reordered[1].value == {"data": "value2"} and reordered[1].key == "key2"
        assert isinstance(reordered[2], list)
        assert ("test", "foo") in reordered[2] and ("test", "bar") in reordered[2]
        assert reordered[3] is None
        assert isinstance(reordered[4], Item)
        assert reordered[4].value == {"data": "value1"} and reordered[4].key == "key1"

    _run(stores, body)


def test_async_batch_get_ops(stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        await store.aput(("test",), "key1", {"data": "value1"})
        await store.aput(("test",), "key2", {"data": "value2"})
        got = await store.abatch([GetOp(("test",), "key1"), GetOp(("test",), "key2"),
                                  GetOp(("test",), "key3")])
        assert len(got) == 3
        assert isinstance(got[0], Item) and isinstance(got[1], Item) and got[2] is None
        assert (got[0].key, got[1].key) == ("key1", "key2")

    _run(stores, body)


def test_async_batch_put_ops(stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        put = await store.abatch([PutOp(("test",), "key1", {"data": "value1"}),
                                  PutOp(("test",), "key2", {"data": "value2"}),
                                  PutOp(("test",), "key3", None)])
        assert len(put) == 3
        assert all(result is None for result in put)
        assert len(await store.asearch(("test",), limit=10)) == 2

    _run(stores, body)


def test_async_batch_search_ops(stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        await store.aput(("test", "foo"), "key1", {"data": "value1"})
        await store.aput(("test", "bar"), "key2", {"data": "value2"})
        found = await store.abatch([
            SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
            SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0)])
        assert len(found) == 2
        assert isinstance(found[0], list) and len(found[0]) == 1
        assert isinstance(found[1], list) and len(found[1]) == 2

    _run(stores, body)


def test_async_batch_list_namespaces_ops(stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        await store.aput(("test", "namespace1"), "key1", {"data": "value1"})
        await store.aput(("test", "namespace2"), "key2", {"data": "value2"})
        listed = await store.abatch([ListNamespacesOp(match_conditions=None, max_depth=None,
                                                      limit=10, offset=0)])
        assert len(listed) == 1
        assert isinstance(listed[0], list) and len(listed[0]) == 2
        assert ("test", "namespace1") in listed[0]
        assert ("test", "namespace2") in listed[0]

    _run(stores, body)


def test_async_basic_store_ops(stores: Stores) -> None:
    """sqlite's async test_basic_store_ops (its 1.01 s pause kept)."""
    import uuid

    async def body(store: BaseStore) -> None:
        uid = uuid.uuid4().hex
        namespace = (uid, "test", "documents")
        assert len(await store.asearch((uid,))) == 0
        await store.aput(namespace, "doc1", {"title": "Test Document", "content": "Hello"})
        item = await store.aget(namespace, "doc1")
        assert item is not None and item.namespace == namespace and item.key == "doc1"
        await asyncio.sleep(1.01)
        await store.aput(namespace, "doc1", {"title": "Updated", "content": "Hello, LangGraph!"})
        updated = await store.aget(namespace, "doc1")
        assert updated is not None
        assert updated.value == {"title": "Updated", "content": "Hello, LangGraph!"}
        assert updated.updated_at > item.updated_at
        assert await store.aget((uid, "test", "other_documents"), "doc1") is None
        await store.aput(namespace, "doc2", {"title": "Another Document", "content": "Hi"})
        items = await store.asearch((uid, "test"), limit=10)
        assert {i.key for i in items} == {"doc1", "doc2"}
        assert (uid, "test", "documents") in await store.alist_namespaces(prefix=(uid, "test"))
        await store.adelete(namespace, "doc1")
        await store.adelete(namespace, "doc2")
        assert await store.aget(namespace, "doc1") is None
        assert len(await store.asearch((uid, "test"), limit=10)) == 0

    _run(stores, body, fields=["key0", "key1", "key3"])


def test_async_namespace_segment_boundary(stores: Stores) -> None:
    async def body(store: BaseStore) -> None:
        for namespace in [("foo",), ("foo", "child"), ("foobar",), ("uid", "users", "alice"),
                          ("uid", "users", "malice"), ("user_1",), ("userX1",)]:
            await store.aput(namespace, "k", {"v": 1})
        found = {item.namespace for item in await store.asearch(("foo",), limit=100)}
        assert found == {("foo",), ("foo", "child")}
        found = {item.namespace for item in await store.asearch(("user_1",), limit=100)}
        assert found == {("user_1",)}
        assert set(await store.alist_namespaces(suffix=("alice",), limit=100)) == {
            ("uid", "users", "alice")}

    _run(stores, body, vector=False)


def test_store_ttl(semmem_stores: Stores) -> None:
    store = semmem_stores.make(vector=False, ttl=TTL_CONFIG)  # type: ignore[arg-type]
    ns = ("foo",)
    store.put(ns, key="item1", value={"foo": "bar"}, ttl=TTL_MINUTES)
    time.sleep(TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=True) is not None
    time.sleep(TTL_SECONDS - 2)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    time.sleep(TTL_SECONDS - 2)
    assert store.get(ns, key="item1", refresh_ttl=False) is not None
    time.sleep(TTL_SECONDS - 1)
    assert len(store.search(ns, query="bar", refresh_ttl=False)) == 0


def test_omit_expired_filters_read_paths(semmem_stores: Stores) -> None:
    store = semmem_stores.make(vector=False, ttl=TTL_CONFIG)  # type: ignore[arg-type]
    expired_ns, control_ns = ("omit", "expired"), ("omit", "control")
    store.put(expired_ns, "e", {"data": "gone"}, ttl=TTL_MINUTES)
    store.put(control_ns, "c", {"data": "keep"}, ttl=None)
    expire_now(store, expired_ns, "e")
    assert store.get(expired_ns, "e") is None
    assert store.get(control_ns, "c") is not None
    assert store.search(expired_ns) == []
    assert [i.key for i in store.search(control_ns)] == ["c"]
    namespaces = store.list_namespaces(prefix=("omit",))
    assert expired_ns not in namespaces
    assert control_ns in namespaces


def test_omit_expired_refresh_ttl_only_refreshes_live_rows(semmem_stores: Stores) -> None:
    store = semmem_stores.make(vector=False, ttl=TTL_CONFIG)  # type: ignore[arg-type]
    ns = ("refresh",)
    store.put(ns, "expired", {"n": 0}, ttl=TTL_MINUTES)
    store.put(ns, "live_get", {"n": 1}, ttl=TTL_MINUTES)
    store.put(ns, "live_search", {"n": 2}, ttl=TTL_MINUTES)
    expire_now(store, ns, "expired")
    expired_before = expires_at(store, ns, "expired")
    get_before = expires_at(store, ns, "live_get")
    search_before = expires_at(store, ns, "live_search")
    time.sleep(0.01)  # a refreshed expiry is later than the one set at the put
    assert store.get(ns, "expired", refresh_ttl=True) is None
    assert "expired" not in [i.key for i in store.search(ns, refresh_ttl=True)]
    assert expires_at(store, ns, "expired") == expired_before
    assert store.get(ns, "live_get", refresh_ttl=True) is not None
    assert expires_at(store, ns, "live_get") > get_before
    assert expires_at(store, ns, "live_search") > search_before


def test_omit_expired_search_pagination(semmem_stores: Stores) -> None:
    store = semmem_stores.make(vector=False, ttl=TTL_CONFIG)  # type: ignore[arg-type]
    ns = ("page",)
    for k in ("c", "b", "expired", "a"):  # updated_at DESC: a, expired, b, c (postgres backdates)
        store.put(ns, k, {"k": k}, ttl=TTL_MINUTES)
        time.sleep(0.01)
    expire_now(store, ns, "expired")
    assert [i.key for i in store.search(ns, limit=2, offset=0)] == ["a", "b"]
    assert [i.key for i in store.search(ns, limit=2, offset=2)] == ["c"]
