"""What reading an index search's candidates costs, by Lance file format and columns read.

    .venv/bin/python -m benchmarks candidate_reads --rows 1000000 --dir DIR

A recall past the index threshold reads each candidate's columns at random rows of the
partition table (the search returns row addresses; every selected column is then read at each
of them). This writes one table of ``--rows`` item rows of the partition schema
(``schema.partition_schema``: keys, the ``benchmarks/factgen.py`` texts, unit random vectors,
times, attrs JSON; ``--fragment-rows`` per file) in each Lance file format of ``--formats``,
reads the files once (so the page cache holds them, as it does a serving table), then times
``take`` of ``k`` random rows for each column set, the formats and sets interleaved query by
query (this machine is noisy): p50 ms over ``--reps``.

Column sets: ``n`` alone, ``HINT_COLUMNS`` (a write's hint lookup), ``RECALL_COLUMNS`` (a
recall's and a search's) and ``ITEM_COLUMNS`` (all twelve: what the search read before).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

from benchmarks.factgen import facts
from semmem.store.rows import HINT_COLUMNS, ITEM_COLUMNS, KIND_ITEM, RECALL_COLUMNS, dkey_of
from semmem.store.schema import partition_schema

DIM = 384
SETS = {"n": ["n"], "hint": HINT_COLUMNS, "recall": RECALL_COLUMNS, "all 12": ITEM_COLUMNS}


def batches(rows: int, batch: int = 50_000):  # type: ignore[no-untyped-def]
    """Item rows of the partition schema, ``batch`` at a time."""
    schema = partition_schema(DIM)
    texts = facts(10_000)
    rng = np.random.default_rng(7)
    now = 1_780_000_000_000
    for start in range(0, rows, batch):
        size = min(batch, rows - start)
        n = np.arange(start + 1, start + size + 1)
        vec = rng.standard_normal((size, DIM), dtype=np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        text = [f"{texts[i % len(texts)]} ({i})" for i in n]
        cols = {
            "key": [f"i:{i}" for i in n], "kind": np.full(size, KIND_ITEM, np.int8), "n": n,
            "text": text,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), DIM),
            "ts": now - n * 1000, "updated": now - n * 1000, "revision": np.ones(size, np.int64),
            "seq": n, "model": ["all-MiniLM-L6-v2"] * size, "forgotten": np.zeros(size, bool),
            "attrs": [json.dumps({"_created": int(i)}) for i in n],
            "op_fp": [None] * size, "op_result": [None] * size, "op_expires": [None] * size,
            "dkey": [dkey_of(t) for t in text],
        }
        yield pa.table({f.name: pa.nulls(size, f.type) if f.name not in cols  # columns added since
                        else cols[f.name] if isinstance(cols[f.name], pa.Array)
                        else pa.array(cols[f.name], f.type) for f in schema}, schema=schema)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--fragment-rows", type=int, default=25_000)
    parser.add_argument("--formats", default="2.1,2.2")
    parser.add_argument("--k", default="100,50,30")
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--dir", type=Path, default=Path("data/candidate-reads"))
    args = parser.parse_args()
    sets = {}
    for fmt in args.formats.split(","):
        path = args.dir / f"rows-{args.rows}-{fmt}.lance"
        if not path.exists():
            t0 = time.perf_counter()
            reader = pa.RecordBatchReader.from_batches(
                partition_schema(DIM), (b for t in batches(args.rows) for b in t.to_batches()))
            lance.write_dataset(reader, str(path), data_storage_version=fmt,
                                max_rows_per_file=args.fragment_rows)
            print(f"wrote {path} in {time.perf_counter() - t0:.1f} s", flush=True)
        for f in (path / "data").iterdir():
            f.read_bytes()  # into the page cache
        sets[fmt] = lance.dataset(str(path))
    rng = np.random.default_rng(1)
    ks = [int(k) for k in args.k.split(",")]
    times: dict[tuple[str, str, int], list[float]] = {
        (fmt, name, k): [] for fmt in sets for name in SETS for k in ks}
    for _ in range(args.reps + 3):
        rows = np.sort(rng.choice(args.rows, max(ks), replace=False))
        for (fmt, name, k), got in times.items():
            t0 = time.perf_counter()
            sets[fmt].take(rows[:k], columns=SETS[name])
            got.append((time.perf_counter() - t0) * 1000)
    print(f"\n{args.rows:,} rows, {args.fragment_rows:,} per file: take of k random rows, "
          f"p50 ms of {args.reps}")
    print("| format | k | " + " | ".join(SETS) + " |")
    print("| --- | --- |" + " --- |" * len(SETS))
    for fmt in sets:
        for k in ks:
            cells = [f"{np.median(times[(fmt, name, k)][3:]):.2f}" for name in SETS]
            print(f"| {fmt} | {k} | " + " | ".join(cells) + " |")
    if args.dir == Path("data/candidate-reads"):
        shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
