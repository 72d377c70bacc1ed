"""Storage layout decision: one table per partition vs one shared table with a scalar index.

Run: .venv/bin/python -m benchmarks layout [--partitions 2000 --facts 20]
Uses random 384-d vectors (layout cost does not depend on the model). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from datetime import timedelta

import lancedb
import numpy as np
import pyarrow as pa

DIM = 384


def _vectors(n: int, rng: np.random.Generator) -> pa.FixedSizeListArray:
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)), DIM)


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f} ms"


async def per_partition(root: str, parts: int, facts: int) -> dict[str, str]:
    rng = np.random.default_rng(1)
    db = await lancedb.connect_async(root, read_consistency_interval=timedelta(0))
    create, search, openv = [], [], []
    for p in range(parts):
        data = pa.table({"n": pa.array(range(facts), pa.int64()),
                         "text": [f"fact {i}" for i in range(facts)],
                         "vector": _vectors(facts, rng)})
        t0 = time.perf_counter()
        await db.create_table(f"p_{p:06d}", data=data)
        create.append(time.perf_counter() - t0)
    q = rng.standard_normal(DIM).astype(np.float32)
    for _ in range(200):
        name = f"p_{random.randrange(parts):06d}"
        t0 = time.perf_counter()
        tbl = await db.open_table(name)
        await tbl.version()
        openv.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        arr = await tbl.to_arrow()
        mat = arr.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, DIM)
        np.argsort(-(mat @ q))[:10]
        search.append(time.perf_counter() - t0)
    return {"create + first write": _ms(create), "open + version check": _ms(openv),
            "load + exact scan (cold snapshot)": _ms(search)}


async def shared(root: str, parts: int, facts: int) -> dict[str, str]:
    rng = np.random.default_rng(1)
    db = await lancedb.connect_async(root, read_consistency_interval=timedelta(0))
    n = parts * facts
    data = pa.table({"partition": [f"part-{i // facts:06d}" for i in range(n)],
                     "n": pa.array([i % facts for i in range(n)], pa.int64()),
                     "text": [f"fact {i}" for i in range(n)], "vector": _vectors(n, rng)})
    tbl = await db.create_table("shared", data=data)
    await tbl.create_index("partition", config=lancedb.index.BTree())
    q = rng.standard_normal(DIM).astype(np.float32)
    search, append = [], []
    for _ in range(200):
        part = f"part-{random.randrange(parts):06d}"
        t0 = time.perf_counter()
        await (tbl.vector_search(q).where(f"partition = '{part}'").limit(10)).to_arrow()
        search.append(time.perf_counter() - t0)
    for i in range(50):
        row = pa.table({"partition": ["part-000001"], "n": pa.array([facts + i], pa.int64()),
                        "text": ["new"], "vector": _vectors(1, rng)})
        t0 = time.perf_counter()
        await tbl.add(row)
        append.append(time.perf_counter() - t0)
    return {"append one row": _ms(append), "prefiltered search (BTREE on partition)": _ms(search)}


async def main(parts: int, facts: int) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        one = await per_partition(a, parts, facts)
        two = await shared(b, parts, facts)
    print(f"{parts} partitions × {facts} facts\n")
    print("| layout | measure | median |\n| --- | --- | --- |")
    for k, v in one.items():
        print(f"| table per partition | {k} | {v} |")
    for k, v in two.items():
        print(f"| shared table | {k} | {v} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--facts", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.partitions, args.facts))
