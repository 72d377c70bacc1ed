"""LangGraph's store cases, part 1: batches and the basic operations.

Ported from LangGraph's own store tests (https://github.com/langchain-ai/langgraph, commit
f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f; MIT licence, Copyright (c) 2024 LangChain, Inc.):
``libs/checkpoint-sqlite/tests/test_store.py`` (test_batch_order, test_batch_get_ops,
test_batch_put_ops, test_batch_search_ops, test_batch_list_namespaces_ops,
TestSqliteStore.test_basic_store_ops / test_list_namespaces / test_search,
test_basic_store_operations, test_search_items) and
``libs/checkpoint-postgres/tests/test_store.py`` (test_basic_store_ops, whose update must move
``updated_at``). Each case runs on LangGraph's ``InMemoryStore`` and on ``SemmemStore`` against
a real server (``stores`` fixture, conftest.py). Bodies are LangGraph's; only the store they get
is ours (``stores.make()``, with ``fields`` where langgraph's fixture has ``text_fields``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import cast

from langgraph.store.base import GetOp, Item, ListNamespacesOp, MatchCondition, PutOp, SearchOp

from lgport import Stores

Ops = Iterable[GetOp | PutOp | SearchOp | ListNamespacesOp]


def test_batch_order(stores: Stores) -> None:
    store = stores.make()
    store.put(("test", "foo"), "key1", {"data": "value1"})
    store.put(("test", "bar"), "key2", {"data": "value2"})

    ops = [
        GetOp(namespace=("test", "foo"), key="key1"),
        PutOp(namespace=("test", "bar"), key="key2", value={"data": "value2"}),
        SearchOp(namespace_prefix=("test",), filter={"data": "value1"}, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        GetOp(namespace=("test",), key="key3"),
    ]
    results = store.batch(cast(Ops, ops))
    assert len(results) == 5
    assert isinstance(results[0], Item)
    assert isinstance(results[0].value, dict)
    assert results[0].value == {"data": "value1"}
    assert results[0].key == "key1"
    assert results[0].namespace == ("test", "foo")
    assert results[1] is None
    assert isinstance(results[2], list)
    assert len(results[2]) == 1
    assert isinstance(results[2][0], Item)
    assert results[2][0].key == "key1"
    assert results[2][0].value == {"data": "value1"}
    assert isinstance(results[3], list)
    assert len(results[3]) > 0
    assert ("test", "foo") in results[3]
    assert ("test", "bar") in results[3]
    assert results[4] is None

    ops_reordered = [
        SearchOp(namespace_prefix=("test",), filter=None, limit=5, offset=0),
        GetOp(namespace=("test", "bar"), key="key2"),
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=5, offset=0),
        PutOp(namespace=("test",), key="key3", value={"data": "value3"}),
        GetOp(namespace=("test", "foo"), key="key1"),
    ]
    results_reordered = store.batch(cast(Ops, ops_reordered))
    assert len(results_reordered) == 5
    assert isinstance(results_reordered[0], list)
    assert len(results_reordered[0]) >= 2
    assert isinstance(results_reordered[1], Item)
    assert results_reordered[1].value == {"data": "value2"}
    assert results_reordered[1].key == "key2"
    assert results_reordered[1].namespace == ("test", "bar")
    assert isinstance(results_reordered[2], list)
    assert len(results_reordered[2]) > 0
    assert results_reordered[3] is None
    assert isinstance(results_reordered[4], Item)
    assert results_reordered[4].value == {"data": "value1"}
    assert results_reordered[4].key == "key1"
    assert results_reordered[4].namespace == ("test", "foo")

    item3 = store.get(("test",), "key3")
    assert item3 is not None
    assert item3.value == {"data": "value3"}


def test_batch_get_ops(stores: Stores) -> None:
    store = stores.make()
    store.put(("test",), "key1", {"data": "value1"})
    store.put(("test",), "key2", {"data": "value2"})
    ops = [GetOp(namespace=("test",), key="key1"), GetOp(namespace=("test",), key="key2"),
           GetOp(namespace=("test",), key="key3")]
    results = store.batch(ops)
    assert len(results) == 3
    assert isinstance(results[0], Item) and isinstance(results[1], Item)
    assert results[2] is None
    assert results[0].key == "key1"
    assert results[1].key == "key2"


def test_batch_put_ops(stores: Stores) -> None:
    store = stores.make()
    ops = [PutOp(namespace=("test",), key="key1", value={"data": "value1"}),
           PutOp(namespace=("test",), key="key2", value={"data": "value2"}),
           PutOp(namespace=("test",), key="key3", value=None)]
    results = store.batch(ops)
    assert len(results) == 3
    assert all(result is None for result in results)
    item1 = store.get(("test",), "key1")
    item2 = store.get(("test",), "key2")
    item3 = store.get(("test",), "key3")
    assert item1 and item1.value == {"data": "value1"}
    assert item2 and item2.value == {"data": "value2"}
    assert item3 is None


def test_batch_search_ops(stores: Stores) -> None:
    store = stores.make()
    test_data = [
        (("test", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("test", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("test", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    ops = [
        SearchOp(namespace_prefix=("test",), filter={"tag": "a"}, limit=10, offset=0),
        SearchOp(namespace_prefix=("test",), filter=None, limit=2, offset=0),
        SearchOp(namespace_prefix=("test", "foo"), filter=None, limit=10, offset=0),
    ]
    results = cast(list[list[Item]], store.batch(ops))
    assert len(results) == 3
    assert len(results[0]) == 2
    assert all(item.value["tag"] == "a" for item in results[0])
    assert len(results[1]) == 2
    assert len(results[2]) == 1
    assert results[2][0].namespace == ("test", "foo")


def test_batch_list_namespaces_ops(stores: Stores) -> None:
    store = stores.make()
    test_data = [
        (("test", "documents", "public"), "doc1", {"content": "public doc"}),
        (("test", "documents", "private"), "doc2", {"content": "private doc"}),
        (("test", "images", "public"), "img1", {"content": "public image"}),
        (("prod", "documents", "public"), "doc3", {"content": "prod doc"}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    ops = [
        ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
        ListNamespacesOp(match_conditions=None, max_depth=2, limit=10, offset=0),
        ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("public",)),),
                         max_depth=None, limit=10, offset=0),
    ]
    results = cast(list[list[tuple[str, ...]]], store.batch(cast(Ops, ops)))
    assert len(results) == 3
    assert len(results[0]) == len(test_data)
    assert all(len(ns) <= 2 for ns in results[1])
    assert all(ns[-1] == "public" for ns in results[2])


def test_basic_store_ops(stores: Stores) -> None:
    """TestSqliteStore.test_basic_store_ops with postgres's stricter ``updated_at``."""
    store = stores.make()
    namespace = ("test", "documents")
    item_id = "doc1"
    item_value = {"title": "Test Document", "content": "Hello, World!"}
    store.put(namespace, item_id, item_value)
    item = store.get(namespace, item_id)
    assert item
    assert item.namespace == namespace
    assert item.key == item_id
    assert item.value == item_value

    time.sleep(0.01)  # langgraph's: the updated timestamp must differ
    updated_value = {"title": "Updated Document", "content": "Hello, Updated!"}
    store.put(namespace, item_id, updated_value)
    updated_item = store.get(namespace, item_id)
    assert updated_item is not None
    assert updated_item.value == updated_value
    assert updated_item.updated_at > item.updated_at  # postgres's assertion

    assert store.get(("test", "other_documents"), item_id) is None
    store.delete(namespace, item_id)
    assert store.get(namespace, item_id) is None


def test_list_namespaces(stores: Stores) -> None:
    store = stores.make()
    test_namespaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for namespace in test_namespaces:
        store.put(namespace, "dummy", {"content": "dummy"})
    all_namespaces = store.list_namespaces()
    assert len(all_namespaces) == len(test_namespaces)
    test_prefix_namespaces = store.list_namespaces(prefix=("test",))
    assert len(test_prefix_namespaces) == 4
    assert all(ns[0] == "test" for ns in test_prefix_namespaces)
    public_namespaces = store.list_namespaces(suffix=("public",))
    assert len(public_namespaces) == 3
    assert all(ns[-1] == "public" for ns in public_namespaces)
    depth_2_namespaces = store.list_namespaces(max_depth=2)
    assert all(len(ns) <= 2 for ns in depth_2_namespaces)
    paginated_namespaces = store.list_namespaces(limit=3)
    assert len(paginated_namespaces) == 3
    for namespace in test_namespaces:
        store.delete(namespace, "dummy")


def test_search(stores: Stores) -> None:
    store = stores.make()
    test_data = [
        (("test", "docs"), "doc1",
         {"title": "First Doc", "author": "Alice", "tags": ["important"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["draft"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["final"]}),
    ]
    for namespace, key, value in test_data:
        store.put(namespace, key, value)
    all_items = store.search(("test",))
    assert len(all_items) == 3
    docs_items = store.search(("test", "docs"))
    assert len(docs_items) == 2
    assert all(item.namespace == ("test", "docs") for item in docs_items)
    alice_items = store.search(("test",), filter={"author": "Alice"})
    assert len(alice_items) == 2
    assert all(item.value["author"] == "Alice" for item in alice_items)
    paginated_items = store.search(("test",), limit=2)
    assert len(paginated_items) == 2
    offset_items = store.search(("test",), offset=2)
    assert len(offset_items) == 1
    for namespace, key, _ in test_data:
        store.delete(namespace, key)


def test_basic_store_operations(stores: Stores) -> None:
    store = stores.make(fields=["key0", "key1", "key3"])
    uid = uuid.uuid4().hex
    namespace = (uid, "test", "documents")
    item_id = "doc1"
    item_value = {"title": "Test Document", "content": "Hello, World!"}
    results = store.search((uid,))
    assert len(results) == 0

    store.put(namespace, item_id, item_value)
    item = store.get(namespace, item_id)
    assert item is not None
    assert item.namespace == namespace
    assert item.key == item_id
    assert item.value == item_value
    assert item.created_at is not None
    assert item.updated_at is not None

    updated_value = {"title": "Updated Test Document", "content": "Hello, LangGraph!"}
    store.put(namespace, item_id, updated_value)
    updated_item = store.get(namespace, item_id)
    assert updated_item is not None
    assert updated_item.value == updated_value
    assert updated_item.updated_at >= item.updated_at

    assert store.get((uid, "test", "other_documents"), item_id) is None

    new_item_id = "doc2"
    store.put(namespace, new_item_id, {"title": "Another Document", "content": "Greetings!"})
    items = store.search((uid, "test"), limit=10)
    assert len(items) == 2
    assert any(item.key == item_id for item in items)
    assert any(item.key == new_item_id for item in items)

    namespaces = store.list_namespaces(prefix=(uid, "test"))
    assert (uid, "test", "documents") in namespaces

    store.delete(namespace, item_id)
    store.delete(namespace, new_item_id)
    assert store.get(namespace, item_id) is None
    assert store.get(namespace, new_item_id) is None
    assert len(store.search((uid, "test"), limit=10)) == 0


def test_search_items(stores: Stores) -> None:
    base = "test_search_items"
    test_namespaces = [(base, "documents", "user1"), (base, "documents", "user2"),
                       (base, "reports", "department1"), (base, "reports", "department2")]
    test_items = [
        {"title": "Doc 1", "author": "John Doe", "tags": ["important"]},
        {"title": "Doc 2", "author": "Jane Smith", "tags": ["draft"]},
        {"title": "Report A", "author": "John Doe", "tags": ["final"]},
        {"title": "Report B", "author": "Alice Johnson", "tags": ["draft"]},
    ]
    store = stores.make(fields=["key0", "key1", "key3"])
    for ns, item in zip(test_namespaces, test_items, strict=False):
        store.put(ns, f"item_{ns[-1]}", item)

    docs = store.search((base, "documents"))
    assert len(docs) == 2
    assert all(item.namespace[1] == "documents" for item in docs)
    reports = store.search((base, "reports"))
    assert len(reports) == 2
    assert all(item.namespace[1] == "reports" for item in reports)

    first_page = store.search((base,), limit=2, offset=0)
    second_page = store.search((base,), limit=2, offset=2)
    assert len(first_page) == 2
    assert len(second_page) == 2
    assert {i.key for i in first_page}.isdisjoint({i.key for i in second_page})
    assert len(store.search((base,))) == 4

    john_items = store.search((base,), filter={"author": "John Doe"})
    assert len(john_items) == 2
    assert all(item.value["author"] == "John Doe" for item in john_items)
    draft_items = store.search((base,), filter={"tags": ["draft"]})
    assert len(draft_items) == 2
    assert all("draft" in item.value["tags"] for item in draft_items)
    for ns in test_namespaces:
        store.delete(ns, f"item_{ns[-1]}")
