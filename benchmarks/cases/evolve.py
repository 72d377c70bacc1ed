"""A snapshot brought forward below the index threshold: what one remember, update (a record
edit and a text edit) and forget costs ``evolve``, per op, at several partition sizes.

    .venv/bin/python -m benchmarks evolve --sizes 1000,10000,49000 --ops 40

No model and no table: a snapshot of ``size`` generated facts with random unit vectors (dim
384), its ranking structures built by one recall first (BM25, centring sums, recency), then
``ops`` steps of each kind, each one applied to the newest snapshot as a served process does
(``Snapshots._forward_own``). It prints the median µs of ``evolve`` per kind, and the median
of the first ranking of the moved snapshot (what the recall right after the write adds).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.factgen import facts
from semmem.items import Item
from semmem.ranking.ranker import Ranker
from semmem.store.reads.evolve import evolve
from semmem.store.views import Head, PartitionSnapshot, Tombstone
from semmem.wiring import limit_blas_threads

DIM = 384
MODEL = "bench"


def unit(rng: np.random.Generator, rows: int) -> np.ndarray:
    v = rng.standard_normal((rows, DIM)).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), np.float32)


def build(size: int, texts: list[str], rng: np.random.Generator) -> PartitionSnapshot:
    items = [Item(n=i + 1, text=texts[i], ts=1_000 + i, updated=1_000 + i, revision=1,
                  seq=i + 1, model=MODEL) for i in range(size)]
    return PartitionSnapshot(items, unit(rng, size), Head("p", 1, size, size, MODEL))


def run(size: int, ops: int, ranker: Ranker) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(size)
    texts = facts(size + 4 * ops, seed=size)
    snap = build(size, texts, rng)
    query = unit(rng, 1)[0]
    ranker.rank(snap, query, "who likes tea")
    out: dict[str, tuple[float, float]] = {}
    fresh = iter(texts[size:])
    for kind in ("remember", "record edit", "text edit", "forget"):
        spent, ranked = [], []
        for _ in range(ops):
            head = snap.head
            nxt = Head("p", head.version + 1, head.hwm, head.seq + 1, MODEL)
            tombs: dict[int, Tombstone] = {}
            items: list[Item] = []
            vectors = np.zeros((0, DIM), np.float32)
            if kind == "remember":
                n = head.hwm + 1
                nxt = Head("p", head.version + 1, n, head.seq + 1, MODEL)
                items = [Item(n, next(fresh), 9_000, 9_000 + n, 1, nxt.seq, MODEL)]
                vectors = unit(rng, 1)
            else:
                old = snap.items[int(rng.integers(snap.size))]
                if kind == "forget":
                    tombs = {old.n: Tombstone(old.n, nxt.seq, 9_000 + nxt.seq)}
                elif kind == "record edit":
                    items = [Item(old.n, old.text, old.ts, 9_000 + nxt.seq, old.revision + 1,
                                  nxt.seq, MODEL, {"note": "edited"})]
                    vectors = snap.vectors[snap.index_of(old.n)][None, :].copy()
                else:
                    items = [Item(old.n, next(fresh), old.ts, 9_000 + nxt.seq,
                                  old.revision + 1, nxt.seq, MODEL)]
                    vectors = unit(rng, 1)
            t0 = time.perf_counter()
            snap = evolve(snap, nxt, items, vectors, tombs, {})
            t1 = time.perf_counter()
            ranker.rank(snap, query, "who likes tea")
            t2 = time.perf_counter()
            spent.append((t1 - t0) * 1e6)
            ranked.append((t2 - t1) * 1e6)
        out[kind] = (statistics.median(spent), statistics.median(ranked))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,49000")
    parser.add_argument("--ops", type=int, default=40)
    args = parser.parse_args()
    limit_blas_threads()  # as the server does
    ranker = Ranker()
    print("| items | op | evolve µs p50 | first rank after µs p50 |")
    print("|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        for kind, (spent, ranked) in run(size, args.ops, ranker).items():
            print(f"| {size:,} | {kind} | {spent:,.0f} | {ranked:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
