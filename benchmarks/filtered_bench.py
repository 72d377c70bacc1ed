"""Filtered vs unfiltered search on one indexed partition: p50 / p95 of ``Memory.search``.

    .venv/bin/python benchmarks/filtered_bench.py --size 100000

One partition of ``--size`` facts written whole (``store/dump.py``: one commit, random unit
vectors of 384 dimensions, each fact's metadata ``{"user": "u<i % 10>", "run": i % 100}``),
then one maintenance pass builds its indexes (the vector index, the B-trees and the ``tags``
``LABEL_LIST``). Each search embeds its query with the fake embedder (the model is beside the
point) and is timed whole, after a warm-up: unfiltered, and filtered on ``user`` (10 % of the
facts), on ``user`` and ``run`` (1 %), and on an ``updated`` range (10 %); then, each search
the first at a new version (a ``remember`` before it, untimed: what is kept per version is
read again), unfiltered and on ``user``. Each filtered line's ratio is to the unfiltered line
above it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Item, iso
from semmem.memory import Memory
from semmem.scoping import Filter
from semmem.store import Store
from semmem.store.copies.dump import Dump, write_partition
from semmem.store.views import Head

DIM = 384
T0 = 1_767_225_600_000  # 2026-01-01
WORDS = ["tea", "coffee", "jazz", "rain", "boats", "maps", "trains", "books", "chess", "bread"]


def _items(size: int) -> list[Item]:
    return [Item(n=i, text=f"fact {i}: {WORDS[i % 10]} and {WORDS[(i // 10) % 10]} #{i}",
                 ts=T0 + i * 1000, updated=T0 + i * 1000, revision=1, seq=1, model="bench",
                 attrs={"metadata": {"user": f"u{i % 10}", "run": i % 100}})
            for i in range(1, size + 1)]


async def _timed(memory: Memory, flt: Filter | None, rounds: int,
                 write: bool = False) -> list[float]:
    out = []
    for r in range(rounds):
        query = f"{WORDS[r % 10]} and {WORDS[(r * 3) % 10]}"
        if write:  # untimed: the search is the first at a new version
            await memory.remember("p", f"written {r} {time.perf_counter()}",
                                  metadata={"user": f"u{r % 10}", "run": r % 100})
        start = time.perf_counter()
        await memory.search("p", query, 10, filter=flt)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def main(size: int, rounds: int, root: Path) -> None:
    """Build, index, then print one line per case."""
    embedder = HashingEmbedder(DIM, "bench")
    store = Store(str(root / "db"), dim=DIM, model_id="bench")
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
        cases = [("unfiltered", None, False),
                 ("user (10 %)", user, False),
                 ("user+run (1 %)", Filter.parse({"metadata": {"user": "u3", "run": 13}}), False),
                 ("updated range (10 %)", Filter.parse({"updated": {"lt": tenth}}), False),
                 ("unfiltered, new version", None, True),
                 ("user (10 %), new version", user, True)]
        for _, flt, _ in cases[:4]:  # warm-up: caches, index files
            await _timed(memory, flt, 5)
        base = 0.0
        for name, flt, write in cases:
            ms = sorted(await _timed(memory, flt, rounds, write))
            p50, p95 = statistics.median(ms), ms[int(0.95 * (len(ms) - 1))]
            base = p50 if flt is None else base
            print(f"{name:26s} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  ×{p50 / base:.2f}")
    finally:
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None, help="where to build (default: tmp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        asyncio.run(main(args.size, args.rounds, Path(tmp)))
