"""A snapshot brought forward shares what did not change with the one before it, and the one
before it stays exactly as it was: concurrent recalls hold it."""

from __future__ import annotations

from typing import Any

import numpy as np

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Item
from semmem.memory import Memory
from semmem.ranking.ranker import Ranker
from semmem.store.reads.evolve import evolve
from semmem.store.views import Head, PartitionSnapshot, Tombstone

WORDS = ["tea", "green", "sister", "Porto", "camping", "dog", "garden", "piano"]
QUERIES = ["green tea", "sister in Porto", "camping with the dog", "piano garden"]


def _state(snap: PartitionSnapshot, embedder: HashingEmbedder) -> dict[str, Any]:
    """What a recall of ``snap`` can see, copied out."""
    ranker = Ranker()
    ranked = {q: [(s.item.n, round(s.score, 6)) for s in
                  ranker.rank(snap, embedder.embed_batch([q])[0], q, floor=False)] for q in QUERIES}
    return {"items": list(snap.items), "vectors": snap.vectors.copy(),
            "by_n": dict(snap.by_n), "by_key": dict(snap.by_key), "count": snap.count,
            "tombstones": dict(snap.tombstones), "ops": dict(snap.ops),
            "lexical": {q: ranker._lexical(snap, q).tolist() for q in QUERIES},
            "ranked": ranked, "found": [snap.find_text(it.text) for it in snap.items]}


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["items"] == b["items"]
    assert np.array_equal(a["vectors"], b["vectors"])
    for key in ("by_n", "by_key", "count", "tombstones", "ops", "lexical", "ranked", "found"):
        assert a[key] == b[key], key


async def test_older_snapshots_never_see_a_newer_ones_change(memory: Memory) -> None:
    embedder = memory.embedder
    assert isinstance(embedder, HashingEmbedder)
    await memory.import_("p", [{"text": f"{WORDS[i % 8]} {WORDS[i // 8 % 8]} fact {i}"}
                               for i in range(60)])
    await memory.recall("p", "green tea", 500)  # the snapshot and its ranking structures
    snapshots = memory.store.snapshots
    built = snapshots.rebuilds
    writes = [
        lambda: memory.remember("p", "a new fact about green tea"),
        lambda: memory.remember("p", "tea green fact 1"),  # a duplicate: no change
        lambda: memory.update("p", 5, "the sister moved to Porto"),
        lambda: memory.update("p", 6, attrs={"note": "camping"}),
        lambda: memory.update("p", 7, attrs={"surfacing": "hold"}),
        lambda: memory.forget("p", 9),
        lambda: memory.merge("p", 10, 11),
        lambda: memory.forget("p", 61),
        lambda: memory.remember("p", "piano lessons in the garden"),
    ]
    held: list[tuple[PartitionSnapshot, dict[str, Any]]] = []
    for write in writes:
        old = await memory.store.snapshot("p")
        held.append((old, _state(old, embedder)))
        await write()
        new = await memory.store.snapshot("p")
        assert new is not old and new.version > old.version
        _state(new, embedder)  # ranking structures carried forward and built on the new one
        for snap, seen in held:  # every older snapshot is still what it was
            _same(_state(snap, embedder), seen)
    assert snapshots.rebuilds == built  # all of it brought forward, none of it reread


def _item(n: int, text: str, seq: int) -> Item:
    return Item(n, text, 1_000 + n, 1_000 + seq, 1, seq, "m")


def test_two_snapshots_moved_on_from_one_share_nothing_they_change() -> None:
    """Two snapshots evolved from the same one (a branch: the newer write's buffer is taken)
    each hold their own rows, and their parent keeps its own."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((30, 8)).astype(np.float32)
    items = [_item(n, f"{WORDS[n % 8]} fact {n}", n) for n in range(1, 31)]
    base = PartitionSnapshot(items, vectors, Head("p", 1, 30, 30, "m"))
    ranker = Ranker()
    query = rng.standard_normal(8).astype(np.float32)
    ranker.rank(base, query, "tea fact")
    first = evolve(base, Head("p", 2, 31, 31, "m"), [_item(31, "tea fact new", 31)],
                   rng.standard_normal((1, 8)).astype(np.float32), {}, {})
    second = evolve(base, Head("p", 3, 32, 31, "m"), [_item(32, "dog fact other", 31)],
                    rng.standard_normal((1, 8)).astype(np.float32), {}, {})
    third = evolve(first, Head("p", 4, 31, 32, "m"), [],
                   np.zeros((0, 8), np.float32), {3: Tombstone(3, 32, 2_000)}, {})
    assert [it.n for it in base.items] == list(range(1, 31))
    assert np.array_equal(base.vectors, vectors)
    assert first.items[-1].n == 31 and second.items[-1].n == 32
    assert not np.array_equal(first.vectors[-1], second.vectors[-1])
    assert 3 not in third.by_n and third.get(31) == first.get(31) and 3 in first.by_n
    for snap in (base, first, second, third):
        fresh = PartitionSnapshot(list(snap.items), snap.vectors.copy(), snap.head)
        assert dict(snap.by_n) == dict(fresh.by_n)
        assert dict(snap.by_key) == dict(fresh.by_key)
        for q in ("tea fact", "dog"):
            got = [(s.item.n, round(s.score, 5)) for s in ranker.rank(snap, query, q)]
            want = [(s.item.n, round(s.score, 5)) for s in ranker.rank(fresh, query, q)]
            assert got == want


def test_the_time_naming_items_follow_the_snapshot_without_a_rebuild() -> None:
    """Which items name a time (what a "when" query weighs) is carried to the next snapshot:
    appended and changed items are looked at alone, a forgotten one is cut; the same flags as
    a snapshot built afresh."""
    rng = np.random.default_rng(5)
    texts = ["Mia moved to Porto in 2019", "Mia drinks green tea", "the dog was born in June",
             "piano lessons on Monday", "camping with the dog"]
    items = [_item(n, text, n) for n, text in enumerate(texts, start=1)]
    base = PartitionSnapshot(items, rng.standard_normal((5, 8)).astype(np.float32),
                             Head("p", 1, 5, 5, "m"))
    ranker = Ranker()
    assert ranker._timed(base).tolist() == [1, 0, 1, 1, 0]
    moved = evolve(base, Head("p", 2, 6, 7, "m"),
                   [_item(2, "Mia drinks green tea every Sunday", 6),
                    _item(4, "piano lessons", 7), _item(6, "a trip in August", 7)],
                   rng.standard_normal((3, 8)).astype(np.float32), {3: Tombstone(3, 7, 2_000)},
                   {})
    assert any(k.startswith("timed:") for k in moved.derived)  # carried, not built again
    fresh = PartitionSnapshot(list(moved.items), moved.vectors.copy(), moved.head)
    assert [it.n for it in moved.items] == [1, 2, 4, 5, 6]
    assert ranker._timed(moved).tolist() == ranker._timed(fresh).tolist() == [1, 1, 0, 0, 1]
    assert ranker._timed(base).tolist() == [1, 0, 1, 1, 0]  # the older snapshot as it was
