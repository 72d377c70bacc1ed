"""LangGraph's store cases, part 4: semantic search — embedding, ranking, fields, scores.

Ported from LangGraph's own store tests (https://github.com/langchain-ai/langgraph, commit
f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f; MIT licence, Copyright (c) 2024 LangChain, Inc.):
``libs/checkpoint/tests/test_store.py`` (test_vector_insert_with_auto_embedding,
test_vector_update_with_embedding, test_async_vector_search_with_filters,
test_async_batched_vector_search_concurrent, test_embed_with_path, test_non_ascii),
``libs/checkpoint-sqlite/tests/test_store.py`` (test_vector_search_pagination, with its score
order; test_vector_search_edge_cases; test_embed_with_path_operation_config; test_scores) and
``libs/checkpoint-postgres/tests/test_store.py`` (test_vector_search_with_filters with
``refresh_ttl``; the ``index=False`` no-query assertion of test_embed_with_path_operation_config;
test_search_sorting from test_async_store.py, its 2×100 fillers cut to 2×30 for time).

The index config langgraph passes (``dims``, ``embed``: ``CharacterEmbeddings(dims=500)``,
``fields``) is ``InMemoryStore``'s; ``SemmemStore`` gets ``index={"fields": …}`` and the server
embeds with the same character embedder (``charvec``), so the expected rankings and scores
(``test_scores``: the cosine computed here) are langgraph's own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lgport import Stores, cosine


def test_vector_insert_with_auto_embedding(stores: Stores) -> None:
    store = stores.make()
    docs = [("doc1", {"text": "short text"}), ("doc2", {"text": "longer text document"}),
            ("doc3", {"text": "longest text document here"}),
            ("doc4", {"description": "text in description field"}),
            ("doc5", {"content": "text in content field"}),
            ("doc6", {"body": "text in body field"})]
    for key, value in docs:
        store.put(("test",), key, value)
    results = store.search(("test",), query="long text")
    assert len(results) > 0
    doc_order = [r.key for r in results]
    assert "doc2" in doc_order
    assert "doc3" in doc_order


def test_vector_update_with_embedding(stores: Stores) -> None:
    store = stores.make()
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    results_initial = store.search(("test",), query="Zany Xerxes")
    assert len(results_initial) > 0
    assert results_initial[0].key == "doc1"
    initial_score = results_initial[0].score
    assert initial_score is not None

    store.put(("test",), "doc1", {"text": "new text about dogs"})
    results_after = store.search(("test",), query="Zany Xerxes")
    after_score = next((r.score for r in results_after if r.key == "doc1"), 0.0)
    assert after_score is not None
    assert after_score < initial_score
    for r in store.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after_score

    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    results_new = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in results_new)


FILTER_DOCS = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
               ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
               ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
               ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]


@pytest.mark.parametrize("refresh_ttl", [True, False])
def test_vector_search_with_filters(stores: Stores, refresh_ttl: bool) -> None:
    store = stores.make()
    for key, value in FILTER_DOCS:
        store.put(("test",), key, value)
    results = store.search(("test",), query="apple", filter={"color": "red"},
                           refresh_ttl=refresh_ttl)
    assert len(results) == 2
    assert results[0].key == "doc1"
    results = store.search(("test",), query="car", filter={"color": "red"},
                           refresh_ttl=refresh_ttl)
    assert len(results) == 2
    assert results[0].key == "doc2"
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}},
                           refresh_ttl=refresh_ttl)
    assert len(results) == 3
    assert results[0].key == "doc4"
    results = store.search(("test",), query="apple",
                           filter={"score": {"$gte": 4.0}, "color": "green"})
    assert len(results) == 1
    assert results[0].key == "doc3"


def test_async_vector_search_with_filters(stores: Stores) -> None:
    async def run() -> None:
        store = stores.amake()
        try:
            for key, value in FILTER_DOCS:
                await store.aput(("test",), key, value)
            results = await store.asearch(("test",), query="apple", filter={"color": "red"})
            assert len(results) == 2
            assert results[0].key == "doc1"
            results = await store.asearch(("test",), query="car", filter={"color": "red"})
            assert len(results) == 2
            assert results[0].key == "doc2"
            results = await store.asearch(("test",), query="bbbbluuu",
                                          filter={"score": {"$gt": 3.2}})
            assert len(results) == 3
            assert results[0].key == "doc4"
            results = await store.asearch(("test",), query="apple",
                                          filter={"score": {"$gte": 4.0}, "color": "green"})
            assert len(results) == 1
            assert results[0].key == "doc3"
        finally:
            await stores.aclose()

    asyncio.run(run())


def _check_filter(value: dict[str, Any], filter_: dict[str, Any]) -> None:
    if "color" in filter_:
        assert value["color"] == filter_["color"]
    for field in ("score", "index"):
        for op, bound in filter_.get(field, {}).items():
            got = value[field]
            assert {"$gt": got > bound, "$gte": got >= bound, "$lt": got < bound,
                    "$lte": got <= bound}[op]


def test_async_batched_vector_search_concurrent(stores: Stores) -> None:
    colors = ["red", "blue", "green", "yellow", "purple"]
    things = ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = [(f"doc{i}", {"text": f"{colors[i % 5]} {things[i % 5]}", "color": colors[i % 5],
                         "score": scores[i % 5], "index": i}) for i in range(50)]
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}), ("car", {"color": "blue"}), ("house", {"color": "green"}),
        ("phone", {"score": {"$gt": 4.99}}), ("book", {"score": {"$lte": 3.5}}),
        ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
        ("car", {"score": {"$lt": 5.1}, "color": "blue"}), ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}})]

    async def run() -> None:
        store = stores.amake()
        try:
            await asyncio.gather(*[store.aput(("test",), k, v) for k, v in docs],
                                 *[store.adelete(("test",), k) for k, _ in docs],
                                 *[store.aput(("test",), k, v) for k, v in docs])
            found = await asyncio.gather(*[store.asearch(("test",), query=q, filter=f)
                                           for q, f in queries])
            for results, (query, filter_) in zip(found, queries, strict=False):
                assert len(results) > 0, f"No results for query '{query}' with filter {filter_}"
                for result in results:
                    _check_filter(result.value, filter_)
        finally:
            await stores.aclose()

    asyncio.run(run())


def test_vector_search_pagination(stores: Stores) -> None:
    store = stores.make()
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2
    assert len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    s = [r.score for r in page1 + page2]
    assert None not in s
    assert page1[0].score >= page1[1].score  # type: ignore[operator]
    assert page2[0].score >= page2[1].score  # type: ignore[operator]
    all_results = store.search(("test",), query="test", limit=10)
    assert len(all_results) == 5
    assert all_results[0].score >= all_results[2].score  # type: ignore[operator]


def test_vector_search_edge_cases(stores: Stores) -> None:
    store = stores.make()
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 1


def test_embed_with_path(stores: Stores) -> None:
    async def run() -> None:
        store = stores.amake(fields=["key0", "key1", "key3"])
        doc1 = {"key1": "xxx", "key2": "yyy", "key3": "zzz"}  # key0 omitted: no error
        doc2 = {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"}
        await store.aput(("test",), "doc1", doc1)
        await store.aput(("test",), "doc2", doc2)

        results = await store.asearch(("test",), query="xxx")
        assert len(results) == 2
        assert results[0].key != results[1].key
        ascore, bscore = results[0].score, results[1].score
        assert ascore is not None and bscore is not None
        assert ascore == pytest.approx(bscore, abs=1e-5)

        results = await store.asearch(("test",), query="uuu")
        assert len(results) == 2
        assert results[0].key == "doc2"
        assert results[0].score is not None and results[1].score is not None
        assert results[0].score > results[1].score
        assert ascore == pytest.approx(results[0].score, abs=1e-5)

        results = await store.asearch(("test",), query="zzz")  # sqlite's
        assert results[0].key == "doc1"
        assert results[0].score > results[1].score  # type: ignore[operator]

        results = await store.asearch(("test",), query="www")
        assert len(results) == 2
        assert all(r.score is not None and r.score < ascore for r in results)
        await stores.aclose()

    asyncio.run(run())


def test_embed_with_path_operation_config(stores: Stores) -> None:
    store = stores.make(fields=["key17"])
    doc3 = {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"}
    doc4 = {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"}
    store.put(("test",), "doc3", doc3, index=["key0", "key1"])
    store.put(("test",), "doc4", doc4, index=["key1", "key3"])

    results = store.search(("test",), query="aaa")
    assert len(results) == 2
    assert results[0].key == "doc3"
    assert len({r.key for r in results}) == 2
    assert results[0].score > results[1].score  # type: ignore[operator]
    results = store.search(("test",), query="ggg")
    assert len(results) == 2
    assert results[0].key == "doc4"
    assert results[0].score > results[1].score  # type: ignore[operator]
    results = store.search(("test",), query="bbb")
    assert len(results) == 2
    assert results[0].key != results[1].key
    assert results[0].score == pytest.approx(results[1].score, abs=1e-3)
    results = store.search(("test",), query="ccc")
    assert len(results) == 2
    assert all(r.score is not None and r.score < 0.9 for r in results)

    store.put(("test",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    results = store.search(("test",))
    assert len(results) == 3
    assert all(r.score is None for r in results)  # postgres's
    assert any(r.key == "doc5" for r in results)
    results = store.search(("test",), query="hhh")  # langgraph's in-memory case
    assert len(results) == 3
    assert next(r for r in results if r.key == "doc5").score is None


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(stores: Stores, query: str) -> None:
    store = stores.make(fields=["key0"])
    doc = {"key0": "aaa"}
    store.put(("test",), "doc", doc, index=["key0", "key1"])
    results = store.search((), query=query)
    expected = cosine(stores.embeddings.embed_query(query),
                      stores.embeddings.embed_query(doc["key0"]))
    assert len(results) == 1
    assert results[0].score == pytest.approx(expected, abs=1e-3)


def test_non_ascii(stores: Stores) -> None:
    store = stores.make()
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


def test_search_sorting(stores: Stores) -> None:
    n = 30  # langgraph's N = 100; 30 keeps the real-server run short and the case the same

    async def run() -> None:
        store = stores.amake(fields=["key1"])
        try:
            await store.aput(("test", "M"), "M", {"key1": "mmm"})
            for i in range(n):
                await store.aput(("test", "A"), f"A{i}", {"key1": "no"})
            for i in range(n):
                await store.aput(("test", "Z"), f"Z{i}", {"key1": "no"})
            results = await store.asearch(("test",), query="mmm", limit=10)
            assert len(results) == 10
            assert len({r.key for r in results}) == 10
            assert results[0].key == "M"
            assert results[0].score > results[1].score  # type: ignore[operator]
        finally:
            await stores.aclose()

    asyncio.run(run())
