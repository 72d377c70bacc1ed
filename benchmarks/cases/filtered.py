"""Filtered vs unfiltered search on one partition: p50 / p95 of ``Memory.search``.

    .venv/bin/python -m benchmarks filtered --size 100000

One partition of ``--size`` facts written whole (``store/dump.py``: one commit, random unit
vectors of 384 dimensions, each fact's metadata ``{"user": "u<i % 10>", "run": i % 100}``),
then one maintenance pass builds its indexes past the threshold (the vector index, the B-trees,
the ``tags`` ``LABEL_LIST`` and the bitmaps); below it the partition is ranked from its
snapshot. Each search embeds its query with the fake embedder (the model is beside the point)
and is timed whole, after a warm-up. At a settled version: unfiltered, and filtered on
``user`` (10 % of the facts: broad), on ``user`` and ``run`` (1 %: selective) and on an
``updated`` range (10 %). Right after a write: each search the first at a new version (a
``remember`` before it, untimed, with metadata of the same shape): unfiltered, ``user`` and
``user`` + ``run``. Then a blank-text recall right after a write, unscoped and scoped to
``user`` (a token's scope: the newest rows it selects). The cases of a group take turns
round by round, so a change in the machine's load falls on all of them; each filtered line's
ratios (p50 and p95) are to the unfiltered line of its group.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Item, iso
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.dump import Dump, write_partition
from semmem.store.upkeep.indexes import INDEX_THRESHOLD
from semmem.store.views import Head

DIM = 384
T0 = 1_767_225_600_000  # 2026-01-01
WORDS = ["tea", "coffee", "jazz", "rain", "boats", "maps", "trains", "books", "chess", "bread"]


def _items(size: int) -> list[Item]:
    return [Item(n=i, text=f"fact {i}: {WORDS[i % 10]} and {WORDS[(i // 10) % 10]} #{i}",
                 ts=T0 + i * 1000, updated=T0 + i * 1000, revision=1, seq=1, model="bench",
                 attrs={"metadata": {"user": f"u{i % 10}", "run": i % 100}})
            for i in range(1, size + 1)]


async def _timed(memory: Memory, filters: list[Filter | None], rounds: int,
                 write: bool = False, blank: bool = False) -> list[list[float]]:
    """Milliseconds of each search (``blank``: recall with blank text), per filter, the filters
    taking turns each round."""
    out: list[list[float]] = [[] for _ in filters]
    for r in range(rounds):
        query = f"{WORDS[r % 10]} and {WORDS[(r * 3) % 10]}"
        for i, flt in enumerate(filters):
            if write:  # untimed: the search is the first at a new version
                await memory.remember("p", f"written {r} {i} {time.perf_counter()}",
                                      metadata={"user": f"u{r % 10}", "run": (r + i) % 100})
            start = time.perf_counter()
            if blank:
                await memory.recall("p", None, 4096, filter=flt)
            else:
                await memory.search("p", query, 10, filter=flt)
            out[i].append((time.perf_counter() - start) * 1000)
    return out


def _line(name: str, ms: list[float], base: tuple[float, float] | None) -> tuple[float, float]:
    ms = sorted(ms)
    p50, p95 = statistics.median(ms), ms[int(0.95 * (len(ms) - 1))]
    ratio = "" if base is None else f"  ×{p50 / base[0]:.2f} / ×{p95 / base[1]:.2f}"
    print(f"{name:30s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms{ratio}")
    return p50, p95


async def main(size: int, rounds: int, root: Path, threshold: int) -> None:
    """Build, index, then print one line per case."""
    embedder = HashingEmbedder(DIM, "bench")
    store = Store(str(root / "db"), dim=DIM, model_id="bench", index_threshold=threshold)
    await store.open()
    memory = Memory(store, embedder)
    try:
        started = time.perf_counter()
        vectors = np.random.default_rng(7).standard_normal((size, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        await write_partition(store, Dump(Head("p", 0, size, 1, "bench"), _items(size),
                                          vectors, {}))
        written = time.perf_counter() - started
        await memory.maintain("p")
        indexed = time.perf_counter() - started - written
        view = await store.read_view("p")
        print(f"{size} facts: written {written:.1f} s, indexed {indexed:.1f} s "
              f"(indexed view: {view.indexed})")
        tenth = iso(T0 + (size // 10) * 1000)
        user = Filter.parse({"metadata": {"user": "u3"}})
        both = Filter.parse({"metadata": {"user": "u3", "run": 13}})
        settled = [("unfiltered", None), ("user (10 %)", user), ("user+run (1 %)", both),
                   ("updated range (10 %)", Filter.parse({"updated": {"lt": tenth}}))]
        after_write = [("unfiltered, after a write", None), ("user (10 %), after a write", user),
                       ("user+run (1 %), after a write", both)]
        blank = [("blank recall, after a write", None),
                 ("scoped blank recall (10 %), after", user)]
        for group, write, only in ((settled, False, False), (after_write, True, False),
                                   (blank, True, True)):
            filters = [flt for _, flt in group]
            await _timed(memory, filters, 5, write, only)  # warm-up: caches, index files
            base = None
            for (name, _), ms in zip(group, await _timed(memory, filters, rounds, write, only),
                                     strict=True):
                kept = _line(name, ms, base)
                base = base or kept
    finally:
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None, help="where to build (default: tmp)")
    parser.add_argument("--threshold", type=int, default=INDEX_THRESHOLD,
                        help="the index threshold (below it: read from the snapshot)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        asyncio.run(main(args.size, args.rounds, Path(tmp), args.threshold))
