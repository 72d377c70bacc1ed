"""What a partition past the index threshold costs per new version: the write, this process's
read view after its own write, another replica's read view, and retention's live count.

    .venv/bin/python -m benchmarks indexed_views --size 200000 --reps 30

One partition of ``--size`` rows (random unit vectors, 384 dimensions, written through
``Store.write`` in batches) in a temp store under ``data/``, indexed; two ``Store`` objects on
the same directory stand for two replicas (``A`` writes, ``B`` reads). The fake embedder
(``semmem.embedding.fakes``) makes the texts' vectors: the model is beside the point here.
Per step, the median (p50) and p95 in milliseconds:

- ``remember``: ``Memory.remember`` on A (its hint lookup, an ANN search, included);
- ``write``: one new item through ``Store.write`` on A (no hint lookup);
- ``own view``: ``Store.read_view`` on A right after its own write;
- ``other view``: ``Store.read_view`` on B right after A's write (a version B never saw);
- ``live``: ``Retention.live`` of B's view (what search counts and stats ask).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import mutation
from semmem.embedding.fakes import HashingEmbedder
from semmem.items import now_ms
from semmem.lifecycle.retention import Retention
from semmem.memory import Memory
from semmem.store import ItemRow, Mutation, Store

DIM = 384
PARTITION = "bench"


async def fill(store: Store, size: int, batch: int = 25_000) -> None:
    """``size`` items of random unit vectors, in commits of ``batch``."""
    rng = np.random.default_rng(7)
    n = 0
    while n < size:
        take = min(batch, size - n)
        vectors = rng.standard_normal((take, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ts = now_ms()
        rows = [ItemRow(n + i + 1, f"fact number {n + i + 1}", vectors[i], ts, ts, 1)
                for i in range(take)]
        hwm = n + take
        await store.write(PARTITION, mutation(rows, hwm))
        n = hwm


def stats(values: list[float]) -> str:
    """p50 and p95 of ``values`` (ms)."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {np.median(ordered):7.2f}  p95 {p95:7.2f}"


async def timed(step: Callable[[], Awaitable[Any]]) -> float:
    """Milliseconds ``step`` took."""
    t0 = time.perf_counter()
    await step()
    return (time.perf_counter() - t0) * 1000


async def run(size: int, reps: int, threshold: int) -> None:
    """Every figure for one partition of ``size`` rows."""
    tmp = Path(tempfile.mkdtemp(prefix="indexed-views-", dir=Path.cwd() / "data"))
    embedder = HashingEmbedder(DIM, "hashing-384")
    try:
        a = Store(str(tmp), dim=DIM, model_id=embedder.model_id, index_threshold=threshold)
        b = Store(str(tmp), dim=DIM, model_id=embedder.model_id, index_threshold=threshold)
        await a.open()
        await b.open()
        t0 = time.perf_counter()
        await fill(a, size)
        fill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        built = await a.build_index(PARTITION)
        index_s = time.perf_counter() - t0
        print(f"size {size}: filled in {fill_s:.1f} s, index {built!r} in {index_s:.1f} s")
        memory = Memory(a, embedder)
        retention = Retention(b)
        await memory.recall(PARTITION, "warm up", 1024)
        await b.read_view(PARTITION)
        figures: dict[str, list[float]] = {k: [] for k in
                                           ("remember", "write", "own view", "other view",
                                            "live")}
        held: list[Any] = []

        async def other() -> None:
            held.append(await b.read_view(PARTITION))

        for i in range(reps):
            remember = functools.partial(memory.remember, PARTITION,
                                         f"remembered fact {i} of the bench")
            figures["remember"].append(await timed(remember))
            figures["own view"].append(await timed(lambda: a.read_view(PARTITION)))

            async def one(i: int = i) -> None:
                def plan(view: Any) -> Mutation:
                    n = view.hwm + 1
                    vector = embedder.embed_batch([f"written {i}"])[0]
                    ts = now_ms()
                    return Mutation(items=[ItemRow(n, f"written {i}", vector, ts, ts, 1)],
                                    hwm=n)
                await a.write(PARTITION, plan)

            figures["write"].append(await timed(one))
            figures["other view"].append(await timed(other))
            figures["live"].append(await timed(lambda: retention.live(held[-1])))
        view = await b.read_view(PARTITION)
        print(f"views indexed: {view.indexed}, count {view.count} (expected {size + 2 * reps})")
        for name, values in figures.items():
            print(f"  {name:11s} {stats(values)}")
        await a.close()
        await b.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--threshold", type=int, default=50_000)
    args = parser.parse_args()
    asyncio.run(run(args.size, args.reps, args.threshold))


if __name__ == "__main__":
    main()
