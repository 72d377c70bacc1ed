"""LangGraph's store cases, part 3: search filters — hostile values, numbers, booleans, keys.

Ported from LangGraph's own store tests (https://github.com/langchain-ai/langgraph, commit
f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f; MIT licence, Copyright (c) 2024 LangChain, Inc.):
``libs/checkpoint-sqlite/tests/test_store.py`` (test_sql_injection_vulnerability,
test_sql_injection_filter_values, test_numeric_filter_safety, test_boolean_filter_safety,
test_filter_keys_with_hyphens_and_digits) and ``libs/checkpoint/tests/test_store.py``
(test_async_batch_store_deduplication, its observable part). Each runs on ``InMemoryStore``
and on ``SemmemStore``, except where a docstring says why one kind alone.

Adapted, and why: a filter key that is not a plain field is refused by SQLite
(``ValueError("Invalid filter key")``) and matches nothing in ``InMemoryStore``; the port
accepts either, as long as nothing leaks. ``InMemoryStore`` reads no dotted path, so the
hyphen/digit keys case (SQLite's dotted paths) runs on ``SemmemStore`` alone. The
deduplication case's spy on ``InMemoryStore.batch`` tests LangGraph's own batching class, not
a store; what a caller sees of it (equal answers, the last put of a key wins) is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from lgport import Stores


def test_sql_injection_vulnerability(stores: Stores) -> None:
    store = stores.make(vector=False)
    store.put(("docs",), "public", {"access": "public", "data": "public info"})
    store.put(("docs",), "private", {"access": "private", "data": "secret", "password": "123"})
    normal = store.search(("docs",), filter={"access": "public"})
    assert len(normal) == 1
    assert normal[0].value["access"] == "public"
    malicious_key = "access') = 'public' OR '1'='1' OR json_extract(value, '$."
    leaked: list[Any] = []
    with contextlib.suppress(ValueError):  # SQLite refuses it; InMemoryStore matches nothing
        leaked = store.search(("docs",), filter={malicious_key: "dummy"})
    assert leaked == []


def test_sql_injection_filter_values(stores: Stores) -> None:
    store = stores.make(vector=False)
    store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    store.put(("docs",), "doc3", {"access": "secret", "title": "Secret Document"})
    for malicious_value in ["public' OR '1'='1", "public'; --",
                            "public' UNION SELECT * FROM store --", "public\x00' OR '1'='1",
                            "''''", "public' OR 'א'='א"]:
        assert len(store.search(("docs",), filter={"access": malicious_value})) == 0
    store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    results = store.search(("docs",), filter={"title": "O'Brien's Document"})
    assert len(results) == 1
    assert results[0].value["title"] == "O'Brien's Document"


def test_numeric_filter_safety(stores: Stores) -> None:
    store = stores.make(vector=False)
    store.put(("items",), "item1", {"price": 10, "quantity": 5})
    store.put(("items",), "item2", {"price": 20, "quantity": 3})
    store.put(("items",), "item3", {"price": 30, "quantity": 1})
    results = store.search(("items",), filter={"price": {"$gt": 15}})
    assert len(results) == 2
    assert all(r.value["price"] > 15 for r in results)
    assert len(store.search(("items",), filter={"price": {"$lt": float("inf")}})) == 3
    assert len(store.search(("items",), filter={"price": {"$gt": float("-inf")}})) == 3
    try:
        assert len(store.search(("items",), filter={"price": {"$eq": float("nan")}})) == 0
    except Exception as e:  # langgraph's: NaN must not raise
        pytest.fail(f"NaN handling should not raise exception: {e}")
    assert len(store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    store.put(("items",), "item4", {"price": -10, "quantity": 0})
    results = store.search(("items",), filter={"price": {"$lt": 0}})
    assert len(results) == 1
    assert results[0].key == "item4"


def test_boolean_filter_safety(stores: Stores) -> None:
    store = stores.make(vector=False)
    store.put(("flags",), "flag1", {"active": True, "name": "Feature A"})
    store.put(("flags",), "flag2", {"active": False, "name": "Feature B"})
    store.put(("flags",), "flag3", {"active": True, "name": "Feature C"})
    results = store.search(("flags",), filter={"active": True})
    assert len(results) == 2
    assert all(r.value["active"] is True for r in results)
    results = store.search(("flags",), filter={"active": False})
    assert len(results) == 1
    assert results[0].value["active"] is False


def test_filter_keys_with_hyphens_and_digits(semmem_stores: Stores) -> None:
    """SQLite's case (dotted paths read nested fields); ``InMemoryStore`` reads none."""
    store = semmem_stores.make(vector=False)
    store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "nested"}})
    store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    assert [r.key for r in store.search(("docs",), filter={"access-level": "public"})] == [
        "hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"user.access-level": "nested"})] == [
        "hyphen"]
    assert [r.key for r in store.search(("docs",), filter={"123abc": "ok"})] == ["digit"]
    assert [r.key for r in store.search(("docs",), filter={"user.123abc": "ok2"})] == ["digit"]


def test_async_batch_store_deduplication(stores: Stores) -> None:
    same_doc, diff_doc = {"value": "same"}, {"value": "different"}
    doc1, doc2 = {"value": 1}, {"value": 2}

    async def run() -> None:
        store = stores.amake(vector=False)
        try:
            await asyncio.gather(store.aput(namespace=("test",), key="same", value=same_doc),
                                 store.aput(namespace=("test",), key="different",
                                            value=diff_doc))
            results = await asyncio.gather(store.aget(namespace=("test",), key="same"),
                                           store.aget(namespace=("test",), key="same"),
                                           store.aget(namespace=("test",), key="different"))
            assert len(results) == 3
            assert results[0] == results[1]
            assert results[0] != results[2]
            assert results[0] is not None and results[0].value == same_doc
            assert results[2] is not None and results[2].value == diff_doc

            puts = await asyncio.gather(store.aput(namespace=("test",), key="key", value=doc1),
                                        store.aput(namespace=("test",), key="key", value=doc2))
            assert len(puts) == 2
            assert all(result is None for result in puts)
            result = await store.aget(namespace=("test",), key="key")
            assert result is not None
            assert result.value == doc2

            found = await asyncio.gather(store.asearch(("test",), filter={"value": 2}),
                                         store.asearch(("test",), filter={"value": 2}))
            assert len(found) == 2
            assert found[0] == found[1]
            assert len(found[0]) == 1
            assert found[0][0].value == doc2
        finally:
            await stores.aclose()

    asyncio.run(run())
