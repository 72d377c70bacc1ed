"""Many partitions: recall latency on a random partition as the partition count grows.

    .venv/bin/python -m benchmarks partitions --partitions 10000 --facts 50

Partitions of ``--facts`` facts each are written through ``Store.write`` with precomputed
vectors (slices of the real 10k base set's embeddings, reused across partitions); queries go
through the real model. At each checkpoint (1, 100, 1k, 10k… partitions) recalls go to random
partitions — cold for most, since the LRU (``cache_size`` 256) holds a fraction of them — and
the store's size on disk and the process's peak RSS are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.harness import mutation, open_encoder, pct, queries
from benchmarks.vectors import base_set
from semmem.embedding.embedder import CachedEmbedder
from semmem.items import now_ms
from semmem.memory import Memory
from semmem.store import ItemRow, Store
from semmem.wiring import limit_blas_threads


def disk_bytes(root: Path) -> int:
    """Bytes of every file under ``root``."""
    total = 0
    for dirpath, _, files in os.walk(root):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    return total


async def main() -> None:
    limit_blas_threads()  # as the server does (semmem.wiring.open_memory)
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=50)
    parser.add_argument("--recalls", type=int, default=100)
    parser.add_argument("--cache-size", type=int, default=256)
    args = parser.parse_args()
    model = open_encoder("torch")
    texts, vectors, _ = base_set(model)
    embedder = CachedEmbedder(model, size=0)
    checkpoints = [c for c in (1, 100, 1000, 10_000, 100_000) if c <= args.partitions]
    (Path.cwd() / "data").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="partitions-", dir=Path.cwd() / "data"))
    rng = random.Random(5)
    print("| partitions | recall p50/p95/p99 ms (random partition) | write of one partition p50 ms "
          "| store on disk | peak RSS |")
    print("| --- | --- | --- | --- | --- |")
    try:
        store = Store(str(tmp), dim=model.dim, model_id=model.model_id,
                      cache_size=args.cache_size)
        await store.open()
        memory = Memory(store, embedder)
        made = 0
        writes: list[float] = []
        qn = 0
        for target in checkpoints:
            while made < target:
                start = (made * args.facts) % (len(texts) - args.facts)
                ts = now_ms()
                rows = [ItemRow(i + 1, texts[start + i], vectors[start + i], ts, ts, 1)
                        for i in range(args.facts)]
                t0 = time.perf_counter()
                await store.write(f"user-{made}", mutation(rows, len(rows)))
                writes.append((time.perf_counter() - t0) * 1000)
                made += 1
            lat = []
            for q in queries(args.recalls, offset=qn):
                partition = f"user-{rng.randrange(made)}"
                t0 = time.perf_counter()
                await memory.recall(partition, q, 1024)
                lat.append((time.perf_counter() - t0) * 1000)
            qn += args.recalls
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"| {made:,} | {pct(lat, .5):.1f} / {pct(lat, .95):.1f} / {pct(lat, .99):.1f} "
                  f"| {pct(writes, .5):.1f} | {disk_bytes(tmp) / 2**20:,.0f} MiB "
                  f"| {rss:,.0f} MiB |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
