"""A snapshot kept current (own commits applied, other writers' versions read as a delta) is
the snapshot a fresh read would build: same items, vectors, tombstones and recalls."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import SemmemError
from semmem.memory import Memory
from tests.support.memory import open_memory

WORDS = ["tea", "green", "sister", "Porto", "camping", "dog", "garden", "piano"]
KINDS = ["remember", "remember", "remember", "update", "note", "forget", "merge", "import",
         "other_remember", "other_update", "other_forget", "maintain", "hold", "other_show"]
QUERIES = ["green tea", "sister in Porto", "camping with the dog", "piano"]

Step = tuple[str, int, int]
steps = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 40), st.integers(1, 12)),
                 min_size=1, max_size=18)


def _text(seed: int) -> str:
    return f"{WORDS[seed % 8]} {WORDS[(seed // 8) % 8]} fact {seed % 13}"


async def _apply(mine: Memory, other: Memory, step: Step) -> None:
    kind, seed, n = step
    who = other if kind.startswith("other_") else mine
    kind = kind.removeprefix("other_")
    try:
        if kind == "remember":
            await who.remember("p", _text(seed))
        elif kind == "update":
            await who.update("p", n, _text(seed + 1))
        elif kind in ("hold", "show"):  # hidden items' texts are stored again when remembered
            await who.update("p", n, attrs={"surfacing": "hold" if kind == "hold" else None})
        elif kind == "note":
            await who.update("p", n, attrs={"note": WORDS[seed % 8]})
        elif kind == "forget":
            await who.forget("p", n)
        elif kind == "merge":
            await who.merge("p", n, n + 1)
        elif kind == "import":
            await who.import_("p", [{"text": _text(seed + k)} for k in range(3)])
        elif kind == "maintain":
            await who.maintain("p")
    except SemmemError:
        pass  # refused writes (unknown numbers and the like) change nothing


async def _same_as_fresh(mine: Memory, root: Path, embedder: HashingEmbedder) -> None:
    fresh = await open_memory(root, embedder)
    try:
        kept, built = await mine.snapshot("p"), await fresh.snapshot("p")
        assert kept.items == built.items
        assert np.array_equal(kept.vectors, built.vectors)
        assert kept.tombstones == built.tombstones and kept.hwm == built.hwm
        assert kept.seq == built.seq and kept.count == built.count
        assert kept.by_key == built.by_key
        for item in built.items:
            assert kept.find_text(item.text) == built.find_text(item.text)
        for query in [*QUERIES, None]:
            a = await mine.recall("p", query, 300)
            b = await fresh.recall("p", query, 300)
            assert (a.text, a.sources) == (b.text, b.sources)
            assert [round(s.score, 5) for s in a.scored] == [round(s.score, 5) for s in b.scored]
    finally:
        await fresh.close()


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
def test_kept_snapshot_recalls_like_a_fresh_one(tmp_path_factory: object,
                                                sequence: list[Step]) -> None:
    root = Path(tmp_path_factory.mktemp("kept"))  # type: ignore[attr-defined]
    embedder = HashingEmbedder()

    async def run() -> None:
        mine = await open_memory(root, embedder)
        other = await open_memory(root, embedder)
        try:
            await mine.remember("p", "the first fact about tea")
            await mine.recall("p", "tea", 300)  # a snapshot to keep current
            for step in sequence:
                await _apply(mine, other, step)
                await _same_as_fresh(mine, root, embedder)
        finally:
            await other.close()
            await mine.close()

    asyncio.run(run())


async def test_own_writes_and_compaction_keep_the_snapshot(tmp_path: Path) -> None:
    """After the first read, this process's writes and a compaction never rebuild it."""
    embedder = HashingEmbedder()
    memory = await open_memory(tmp_path, embedder)
    await memory.import_("p", [{"text": f"fact {i} about {WORDS[i % 8]}"} for i in range(300)])
    await memory.recall("p", "tea", 500)
    snapshots = memory.store.snapshots
    built = snapshots.rebuilds
    for i in range(5):
        await memory.remember("p", f"new fact {i} about tea")
        await memory.update("p", 3 + i, f"changed fact {i}")
        assert (await memory.recall("p", f"new fact {i}", 500)).text.startswith(f"{301 + i}.")
    await memory.maintain("p")
    await memory.recall("p", "tea", 500)
    assert snapshots.rebuilds == built
    await memory.close()


async def test_a_write_is_answered_before_its_snapshot_moves_and_a_read_waits_for_it(
        memory: Memory) -> None:
    """The writer answers, then brings the snapshot forward; a read of the new version in
    between waits for that step rather than reading the table again."""
    from semmem.store.rows import table_name

    await memory.remember("p", "green tea fact")
    await memory.recall("p", "green tea", 1024)  # the snapshot is cached
    store = memory.store
    tbl = await store.conn.writable("p")
    version = await tbl.version()
    rebuilds, forwards = store.snapshots.rebuilds, store.snapshots.forwards
    result = await memory.remember("p", "piano sister fact")
    assert table_name("p") in store.snapshots._following  # answered, snapshot not moved yet
    snap = await store.snapshots.at("p", tbl, version + 1)
    assert result["n"] in {it.n for it in snap.items}
    assert (store.snapshots.rebuilds, store.snapshots.forwards) == (rebuilds, forwards)
    assert store.snapshots._following == {}


async def test_an_edit_in_place_moves_the_snapshot_without_reading_the_table(
        memory: Memory) -> None:
    """A text edit and a forget copy the vectors (on a worker thread): a read of the new
    version waits for that step and gets it, with no rebuild and no delta read."""
    await memory.import_("p", [{"text": f"{WORDS[i % 8]} fact {i}"} for i in range(40)])
    await memory.recall("p", "green tea", 1024)  # the snapshot is cached
    store = memory.store
    tbl = await store.conn.writable("p")
    rebuilds, forwards = store.snapshots.rebuilds, store.snapshots.forwards
    older = await store.snapshot("p")
    vectors = older.vectors.copy()
    await memory.update("p", 3, "the sister moved to Porto")
    await memory.forget("p", 4)
    snap = await store.snapshots.at("p", tbl, await tbl.version())
    edited = snap.get(3)
    assert edited is not None and edited.text == "the sister moved to Porto"
    assert snap.get(4) is None and 4 in snap.tombstones
    assert (store.snapshots.rebuilds, store.snapshots.forwards) == (rebuilds, forwards)
    assert store.snapshots._following == {}
    assert np.array_equal(older.vectors, vectors) and older.get(4) is not None
