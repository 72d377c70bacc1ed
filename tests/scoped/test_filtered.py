"""Reads under a filter: a filtered search or listing is a brute-force filter over the export."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidArguments
from semmem.items import iso, now_ms, parse_iso
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.views import IndexedView
from tests.support.filters import brute
from tests.support.memory import open_memory, small_indexed_memory

DAY = 86_400_000
T0 = parse_iso("2026-01-01T00:00:00Z")
WORDS = ["tea", "coffee", "jazz", "rain", "boats", "maps"]

meta_values = st.fixed_dictionaries({}, optional={
    "user": st.sampled_from(["alice", "bob"]),
    "run": st.sampled_from([1, 2, 2.0, "2"]),  # a string that reads as a number is no number
    "flag": st.sampled_from([True, False, 1, 0]),  # true is no number either
})
records = st.lists(st.tuples(st.sampled_from(WORDS), meta_values, st.integers(0, 9),
                             st.integers(0, 9)), min_size=1, max_size=30)
ranges = st.one_of(st.none(), st.tuples(st.integers(0, 9), st.integers(0, 9)))


def _range(days: tuple[int, int] | None) -> dict[str, str] | None:
    if days is None:
        return None
    lo, hi = sorted(days)
    return {"gte": iso(T0 + lo * DAY), "lt": iso(T0 + hi * DAY)}


async def _check(memory: Memory, rows: list[Any], meta: dict[str, Any],
                 upd: tuple[int, int] | None, ts: tuple[int, int] | None) -> None:
    await memory.import_("p", [
        {"text": f"fact {i} about {word}", "metadata": m or None,
         "ts": iso(T0 + t * DAY), "updated": iso(T0 + max(t, u) * DAY)}
        for i, (word, m, t, u) in enumerate(rows)])
    exported = [rec async for rec in memory.export("p")]
    raw: dict[str, Any] = {"metadata": meta}
    for name, days in (("updated", upd), ("ts", ts)):
        if days is not None:
            raw[name] = _range(days)
    flt = Filter.parse(raw)
    want = brute(exported, raw)
    got = await memory.search("p", "fact about tea", 50, filter=flt)
    assert {e["n"] for e in got["items"]} == want
    assert got["count"] == len(want)
    plain = await memory.search("p", "fact about tea", 50)  # the order an unfiltered one gives
    assert [e["n"] for e in got["items"]] == [e["n"] for e in plain["items"] if e["n"] in want]
    assert {it.n for it in await memory.list("p", filter=flt)} == want


@settings(max_examples=40, deadline=None)
@given(records, meta_values, ranges, ranges)
def test_filtered_search_equals_a_brute_force_filter_over_the_export(
        rows: list[Any], meta: dict[str, Any], upd: tuple[int, int] | None,
        ts: tuple[int, int] | None) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            memory = await open_memory(Path(tmp), HashingEmbedder())
            try:
                await _check(memory, rows, meta, upd, ts)
            finally:
                await memory.close()

    asyncio.run(run())


async def test_filtered_search_of_an_indexed_partition_is_the_brute_force_filter(
        tmp_path: Path) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    oracle = await small_indexed_memory(tmp_path / "db")  # an export would load ``memory``
    try:
        await memory.import_("p", [
            {"text": f"fact {i} about topic{i % 7} and word{i}",
             "metadata": {"user": ["alice", "bob", "carol"][i % 3], "run": i % 2},
             "ts": iso(T0 + (i % 10) * DAY), "updated": iso(T0 + (i % 10) * DAY)}
            for i in range(120)])
        await memory.maintain("p")
        exported = [rec async for rec in oracle.export("p")]
        for raw in ({"metadata": {"user": "alice"}},
                    {"metadata": {"user": "bob", "run": 1}},
                    {"metadata": {"user": "carol"}, "updated": _range((2, 5))},
                    {"ts": _range((0, 3))},
                    {"metadata": {"user": "carol"}, "ts": _range((2, 9))},
                    {"metadata": {"user": "nobody"}}):
            want = brute(exported, raw)
            got = await memory.search("p", "fact about topic3", 50, filter=Filter.parse(raw))
            assert got["count"] == len(want)
            assert len(want) <= 50 and {e["n"] for e in got["items"]} == want
            recalled = await memory.recall("p", "fact about topic3", 4096,
                                           filter=Filter.parse(raw))
            assert {int(s["id"]) for s in recalled.sources} <= want
            assert bool(recalled.sources) == bool(want)
        assert isinstance(memory.store.cached_view("p"), IndexedView)  # read through the index
        # a fact written after the index was built is found through its filter too
        n = (await memory.remember("p", "zebra quartz", metadata={"user": "dora"}))["n"]
        got = await memory.search("p", "zebra", 5, filter=Filter.parse(
            {"metadata": {"user": "dora"}}))
        assert [e["n"] for e in got["items"]] == [n] and got["count"] == 1
        assert got["items"][0]["metadata"] == {"user": "dora"}
        # a count is kept per version: the next version's is read again
        await memory.remember("p", "zebra onyx", metadata={"user": "dora"})
        got = await memory.search("p", "zebra", 5, filter=Filter.parse(
            {"metadata": {"user": "dora"}}))
        assert got["count"] == 2 and len(got["items"]) == 2
        await memory.forget_matching("p", Filter.parse({"metadata": {"user": "dora"}}))
        assert (await memory.search("p", "zebra", 5, filter=Filter.parse(
            {"metadata": {"user": "dora"}})))["count"] == 0
    finally:
        await oracle.close()
        await memory.close()


async def test_filtered_reads_of_a_snapshot_find_covered_facts_ranked_past_its_candidates(
        memory: Memory) -> None:
    # 1 % of the facts covered: most rank below the best ``candidates`` (400) of the whole
    # snapshot, which a filtered read must still reach
    size = 3 * memory.ranker.config.candidates
    await memory.import_("p", [{"text": f"fact {i} about tea and word{i}",
                                "metadata": {"user": f"u{i % 100}"}} for i in range(size)])
    assert not (await memory.store.read_view("p")).indexed
    flt = Filter.parse({"metadata": {"user": "u3"}})
    want = {it.n for it in await memory.list("p", filter=flt)}
    assert len(want) == size // 100
    got = await memory.search("p", "fact about tea", 50, filter=flt)
    assert got["count"] == len(want) and {e["n"] for e in got["items"]} == want
    recalled = {int(s["id"]) for s in (await memory.recall("p", "fact about tea", 4096,
                                                            filter=flt)).sources}
    assert recalled and recalled <= want
    plain = await memory.search("p", "fact about tea", 50)  # the order an unfiltered one gives
    ranked = [e["n"] for e in (await memory.search("p", "fact about tea", 50, filter=Filter.parse(
        {"ts": {"gte": "2000-01-01T00:00:00Z"}})))["items"]]
    assert ranked == [e["n"] for e in plain["items"]]  # a filter covering all: the same order


@pytest.mark.parametrize(("raw", "says"), [
    ({"owner": "x"}, "unknown filter field"),
    ({"metadata": {"a": [1]}}, "flat"),
    ({"updated": {"after": "2026-01-01"}}, "gte, gt, lte or lt"),
    ({"updated": {"gte": "yesterday"}}, "ISO 8601"),
    ("metadata", "must be an object"),
])
def test_filter_parse_refuses_what_it_cannot_read(raw: Any, says: str) -> None:
    with pytest.raises(InvalidArguments, match=says):
        Filter.parse(raw)


def test_filter_bounds_are_inclusive_inside() -> None:
    flt = Filter.parse({"updated": {"gt": "2026-01-01T00:00:00Z", "lt": "2026-01-02T00:00:00Z"}})
    assert flt.updated.lo == T0 + 1 and flt.updated.hi == T0 + DAY - 1
    assert flt.public() == {"updated": {"gte": iso(T0 + 1), "lte": iso(T0 + DAY - 1)}}
    assert Filter.parse({}).empty and Filter.parse(None).empty
    assert "alice" not in Filter.parse({"metadata": {"user": "alice' OR 1=1"}}).where()


def test_a_scope_and_a_call_filter_combine_and_may_not_contradict() -> None:
    scope = Filter.parse({"metadata": {"user": "alice"}})
    both = scope.both(Filter.parse({"metadata": {"run": 1}, "ts": _range((1, 3))}))
    assert both.metadata == {"user": "alice", "run": 1} and both.ts.lo == T0 + DAY
    assert scope.both(Filter.parse({"metadata": {"user": "alice"}})).metadata == {"user": "alice"}
    with pytest.raises(InvalidArguments, match="fixed by this binding"):
        scope.both(Filter.parse({"metadata": {"user": "bob"}}))


# ----- delete by filter ---------------------------------------------------------------------
SECRETS = [f"mallory's secret {i} is MARKER{i} quartz nebula" for i in range(3)]


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_delete_by_filter_leaves_no_text_vector_or_tag_in_any_decoded_file(
        tmp_path: Path, indexed: bool) -> None:
    from datetime import timedelta

    from semmem.items.metadata import tag
    from semmem.store.commit.fence import Fence
    from tests.support.files import decoded_with

    emb = HashingEmbedder()
    root = tmp_path / "db"
    store = Store(str(root), dim=emb.dim, model_id=emb.model_id, index_threshold=200,
                  fence=Fence(skew=0.05, budget=0.3), version_retention=timedelta(0))
    store.upkeep.fold_rows = 0  # every pass folds the tail in: the vectors reach the index
    await store.open()
    m = Memory(store, emb)
    try:
        others = 210 if indexed else 5
        await m.import_("p", [{"text": f"fact {i} about thing{i}", "metadata": {"user": "bob"}}
                              for i in range(others)])
        if indexed:
            assert (await store.maintain("p")) is not None
        for text in SECRETS:
            await m.remember("p", text, metadata={"user": "mallory", "kind": "secret"})
        assert (await store.maintain("p", purge=False)) is not None
        vectors = emb.embed_batch(SECRETS)
        secret_tag = tag("user", "mallory")
        for text, vector in zip(SECRETS, vectors, strict=True):  # the positive controls
            assert decoded_with(root, text=text) and decoded_with(root, vector=vector)
        assert decoded_with(root, text=secret_tag)
        if indexed:
            assert (await store.read_view("p")).indexed
        hwm = (await store.read_view("p")).hwm
        gone = await m.forget_matching("p", Filter.parse({"metadata": {"user": "mallory"}}))
        assert gone == [others + 1, others + 2, others + 3]
        assert (await m.search("p", "secret quartz nebula", 50, filter=Filter.parse(
            {"metadata": {"user": "mallory"}})))["count"] == 0
        assert len(await m.list("p")) == others
        assert (await m.remember("p", "a later fact"))["n"] == hwm + 1  # numbers not reused
        for _ in range(2):  # the purge and its follow-up, as the server's purger runs them
            await store.maintain("p", retention=timedelta(0))
        for text, vector in zip(SECRETS, vectors, strict=True):
            assert decoded_with(root, text=text) == []
            assert decoded_with(root, vector=vector) == []
        assert decoded_with(root, text=secret_tag) == []
        assert decoded_with(root, text="fact 1 about thing1")  # the others stay
    finally:
        await m.close()


async def test_delete_by_filter_needs_a_filter(memory: Memory) -> None:
    await memory.remember("p", "Alice likes tea")
    with pytest.raises(InvalidArguments, match="needs a filter"):
        await memory.forget_matching("p", Filter.parse({}))
    assert len(await memory.list("p")) == 1


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_delete_by_filter_forgets_the_live_facts_it_covers_not_the_expired(
        tmp_path: Path, indexed: bool) -> None:
    # an indexed partition's numbers come through the filter's indexes, not a loaded snapshot
    memory = await small_indexed_memory(tmp_path / "db")
    oracle = await small_indexed_memory(tmp_path / "db")  # its listings load the partition
    try:
        await memory.import_("p", [{"text": f"fact {i} about thing{i}",
                                    "metadata": {"user": ["zed", "amy"][i % 2]}}
                                   for i in range(60 if indexed else 6)])
        if indexed:
            await memory.maintain("p")
        ended = (await memory.remember("p", "an ended fact", metadata={"user": "zed"}))["n"]
        await memory.update("p", ended, attrs={"expiresAt": iso(now_ms() - 1)})
        zed = Filter.parse({"metadata": {"user": "zed"}})
        want = [it.n for it in await oracle.list("p", filter=zed)]
        assert ended not in want and len(want) == (30 if indexed else 3)
        assert (await memory.store.read_view("p")).indexed == indexed
        loads = memory.store.snapshots.rebuilds
        assert await memory.forget_matching("p", zed) == want
        if indexed:  # not loaded whole
            assert memory.store.snapshots.rebuilds == loads
        assert await oracle.list("p", filter=zed) == []
        # (an indexed count still holds the ended fact until the sweep forgets it)
        assert (await memory.search("p", "fact", 10, filter=zed))["items"] == []
    finally:
        await oracle.close()
        await memory.close()
