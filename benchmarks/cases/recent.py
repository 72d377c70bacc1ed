"""A blank-input recall's read of an indexed partition (``Store.recent``) at large sizes.

    .venv/bin/python -m benchmarks recent --sizes 200000,1000000 --reps 30

No model: rows of dimension 16 (the vectors are never read here) written through
``Store.write`` in batches, one row per 10 s of history, the indexes built, then a tail
written after them (40 remembers, 20 updates of old rows, 10 forgets: the unindexed rows a
serving process always has). It prints the median and p90 ms of ``recent(view, 300)`` (what a
blank recall asks: 3 × MAX_SOURCES) and checks the answer against a scan of every live row.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import mutation, pct
from semmem.items import now_ms
from semmem.store import Store
from semmem.store.files import open_dataset
from semmem.store.rows import ItemRow, Lookup
from semmem.store.schema import LIVE_ITEMS
from semmem.store.upkeep.indexes import INDEX_THRESHOLD
from semmem.store.views import IndexedView

DIM = 16
K = 300
BATCH = 50_000


async def fill(store: Store, size: int, start: int) -> None:
    rng = np.random.default_rng(size)
    for first in range(1, size + 1, BATCH):
        last = min(size, first + BATCH - 1)
        vectors = rng.standard_normal((last - first + 1, DIM)).astype(np.float32)
        rows = [ItemRow(n, f"fact number {n}", vectors[n - first], start + n * 10_000,
                        start + n * 10_000, 1) for n in range(first, last + 1)]
        await store.write("bench", mutation(rows, last))


async def tail(store: Store, size: int) -> None:
    rng = np.random.default_rng(1)
    for i in range(40):
        n = size + i + 1
        row = ItemRow(n, f"new fact {n}", rng.standard_normal(DIM).astype(np.float32),
                      now_ms(), now_ms(), 1)
        await store.write("bench", mutation([row], n))
    for n in rng.choice(size, 20, replace=False).tolist():
        row = ItemRow(n + 1, f"changed fact {n + 1}", rng.standard_normal(DIM).astype(np.float32),
                      0, now_ms(), 2)
        await store.write("bench", mutation([row]), lookup=Lookup(numbers=[row.n]))
    for n in [size + 40, size + 39, *rng.choice(size, 8, replace=False).tolist()]:
        row = ItemRow(n, None, None, 0, now_ms(), 3, forgotten=True)
        await store.write("bench", mutation([row]), lookup=Lookup(numbers=[row.n]))


async def run(size: int, reps: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"recent-{size}-"))
    try:
        # the shipped threshold; a smaller one below it (a smoke run's few hundred rows)
        store = Store(str(tmp), dim=DIM, model_id="bench",
                      index_threshold=min(INDEX_THRESHOLD, size // 2))
        await store.open()
        t0 = time.perf_counter()
        await fill(store, size, now_ms() - (size + 10) * 10_000)
        fill_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        await store.build_index("bench")
        index_s = time.perf_counter() - t0
        await tail(store, size)
        view = await store.read_view("bench")
        assert isinstance(view, IndexedView)
        uri = await store.conn.uri_of("bench")
        assert uri is not None
        rows = open_dataset(uri, {}).to_table(columns=["n", "updated"], filter=LIVE_ITEMS)
        order = np.lexsort((rows.column("n").to_numpy(), -rows.column("updated").to_numpy()))
        want = sorted(rows.column("n").to_numpy()[order[:K]].tolist())
        got = await store.recent(view, K)
        assert [it.n for it in got.items] == want, "not the scan's answer"
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            await store.recent(view, K)
            times.append((time.perf_counter() - t0) * 1000)
        indexes = sorted(i.name for i in open_dataset(uri, {}).describe_indices())
        print(f"| {size:,} | {pct(times, 0.5):.1f} | {pct(times, 0.9):.1f} | {fill_s:.0f} s | "
              f"{index_s:.0f} s | {', '.join(indexes)} |", flush=True)
        await store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="200000")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    print(f"| rows | recent({K}) p50 ms | p90 ms | fill | index build | indexes |")
    print("|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        await run(size, args.reps)


if __name__ == "__main__":
    asyncio.run(main())
