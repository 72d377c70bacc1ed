"""Filtered reads across versions: what a filtered read keeps per version (a snapshot's
``Columns``) is carried forward by this process's writes and stays a brute-force filter over
the export after every remember, update, forget, delete by filter and another replica's
write."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from semmem.embedding.fakes import HashingEmbedder
from semmem.filtering import Columns
from semmem.items import iso, parse_iso
from semmem.memory import Memory
from semmem.scoping import Filter
from semmem.store.views import PartitionSnapshot
from tests.support.memory import open_memory

DAY = 86_400_000
T0 = parse_iso("2026-01-01T00:00:00Z")
USERS = ["alice", "bob", "carol"]
FILTERS: list[dict[str, Any]] = [
    {"metadata": {"user": "alice"}},
    {"metadata": {"user": "bob", "run": 1}},
    {"metadata": {"flag": True}},  # true is no number: never the facts with flag 1
    {"metadata": {"run": 1}},
    {"updated": {"lte": iso(T0 + 5 * DAY)}},  # an edit moves a fact out
    {"metadata": {"user": "carol"}, "ts": {"gte": iso(T0 + 3 * DAY)}},
]

meta_values = st.fixed_dictionaries({}, optional={
    "user": st.sampled_from(USERS),
    "run": st.sampled_from([1, 2, 1.0]),
    "flag": st.sampled_from([True, False, 1]),
})
ops = st.lists(st.one_of(
    st.tuples(st.just("remember"), meta_values),
    st.tuples(st.just("update"), st.integers(0, 99), meta_values),  # text and metadata
    st.tuples(st.just("text"), st.integers(0, 99)),  # text only: the metadata stays
    st.tuples(st.just("forget"), st.integers(0, 99)),
    st.tuples(st.just("forget_matching"), st.sampled_from(USERS)),
    st.tuples(st.just("other"), meta_values),  # another replica remembers
), min_size=1, max_size=8)


def _brute(exported: list[dict[str, Any]], raw: dict[str, Any]) -> set[int]:
    """The numbers the export's records say ``raw`` covers, from the wire form alone."""
    out = set()
    for rec in exported:
        meta = rec.get("metadata", {})
        ok = all(k in meta and isinstance(meta[k], bool) == isinstance(v, bool) and meta[k] == v
                 for k, v in raw.get("metadata", {}).items())
        for name in ("updated", "ts"):
            bounds = raw.get(name, {})
            at = parse_iso(rec[name])
            ok = ok and ("gte" not in bounds or at >= parse_iso(bounds["gte"])) \
                and ("lte" not in bounds or at <= parse_iso(bounds["lte"]))
        if ok:
            out.add(rec["n"])
    return out


async def _agree(memory: Memory, oracle: Memory) -> None:
    """Every filter's search is the brute-force filter over the export (``oracle``'s: an
    export reads the whole partition, which would leave ``memory`` holding its snapshot)."""
    exported = [rec async for rec in oracle.export("p")]
    for raw in FILTERS:
        want = _brute(exported, raw)
        got = await memory.search("p", "fact about topic", 50, filter=Filter.parse(raw))
        assert got["count"] == len(want), raw
        if len(want) <= 50:
            assert {e["n"] for e in got["items"]} == want, raw


def _columns(snap: PartitionSnapshot) -> tuple[Any, ...]:
    cols = snap.derived["filter:columns"]
    assert isinstance(cols, Columns)
    return ({k: v.tolist() for k, v in cols.pairs.items() if len(v)}, cols.numbers.tolist(),
            cols.updated.tolist(), cols.ts.tolist())


async def _carried(memory: Memory) -> None:
    """What the last search kept was carried to this version, and is what a fresh build
    gives (checked before any read of the version builds it)."""
    view = await memory.store.read_view("p")
    assert isinstance(view, PartitionSnapshot)
    assert "filter:columns" in view.derived  # evolved, not built by a read
    carried = _columns(view)
    fresh = PartitionSnapshot(list(view.items), view.vectors, view.head)
    fresh.cached("filter:columns", Columns.of)
    assert carried == _columns(fresh)


async def _run(memory: Memory, other: Memory, oracle: Memory, steps: list[Any]) -> None:
    await _agree(memory, oracle)
    for i, step in enumerate(steps):
        live = [it.n for it in await oracle.list("p")]
        kind = step[0]
        if kind == "remember":
            await memory.remember("p", f"new fact {i} about topic", metadata=step[1] or None)
        elif kind == "other":
            await other.remember("p", f"other fact {i} about topic", metadata=step[1] or None)
        elif kind == "forget_matching":
            await memory.forget_matching("p", Filter.parse({"metadata": {"user": step[1]}}))
        elif live and kind == "update":
            await memory.update("p", live[step[1] % len(live)], f"edited fact {i} about topic",
                                metadata=step[2])
        elif live and kind == "text":
            await memory.update("p", live[step[1] % len(live)], f"retold fact {i} about topic")
        elif live and kind == "forget":
            await memory.forget("p", live[step[1] % len(live)])
        if kind != "other":  # this process's write: carried, not built again
            await _carried(memory)
        await _agree(memory, oracle)


def _facts(count: int) -> list[dict[str, Any]]:
    return [{"text": f"fact {i} about topic{i % 7}",
             "metadata": {"user": USERS[i % 3], "run": i % 2, "flag": [True, 1][i % 2]},
             "ts": iso(T0 + (i % 10) * DAY), "updated": iso(T0 + (i % 10) * DAY)}
            for i in range(count)]


@settings(max_examples=25, deadline=None)
@given(ops)
def test_a_snapshots_filter_columns_are_carried_through_writes(steps: list[Any]) -> None:
    async def run() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            memory, other, oracle = [await open_memory(Path(tmp), HashingEmbedder())
                                     for _ in range(3)]
            try:
                await memory.import_("p", _facts(30))
                await _run(memory, other, oracle, steps)
            finally:
                for m in (oracle, other, memory):
                    await m.close()

    asyncio.run(run())
