"""Lance's vector index kinds on the same vectors: build time, size, query latency, recall@10.

    .venv/bin/python -m benchmarks index_kinds --sizes 100000,1000000 --dir DIR

Per size, one table of ``n`` (int64), ``text`` and a 384-dim ``vector`` column, written once
(``--dir`` keeps it between runs), with the benchmark's vectors (``benchmarks/vectors.py``: the
real embeddings of the 10k base set, past 10k copies with a small Gaussian perturbation). For
each index kind in turn (``replace=True`` on the same table) it prints:

- **build s**: ``create_index`` wall time (2 cores, whatever else runs on them);
- **MB**: the index's size on disk (``describe_indices().total_size_bytes``), and per million
  rows;
- **p50 / p95 ms**: the search alone, as ``Store.nearest`` issues it (LanceDB async, a session
  with the store's 1 GiB index cache, cosine, ``nprobes = index_probes(rows)``,
  ``limit = 100`` candidates, selecting ``n``, ``text`` and ``vector``), on real query
  embeddings (the ONNX encoder), after a warm-up pass over other queries;
- **recall@10**: the 10 nearest by exact cosine among the candidates, against the exact top 10
  of a numpy scan over all the vectors (as ``python -m benchmarks recall`` measures it).

Queries are not embedded in the timed step: a core recall adds ~6 ms of query embedding.

``--tails 0,1000,5000,...`` then measures, on a ``--tail-kind`` index, the same search with that
many rows appended unindexed (fragments of 1,000 rows: what Lance searches exactly beside the
index, as serving does), and the time ``optimize_indices`` takes to fold the largest tail in;
the table is restored to its indexed version after.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from benchmarks.harness import pct, queries
from benchmarks.vectors import base_set, expanded
from semmem.wiring import limit_blas_threads

CANDIDATES = 100  # Settings.index_candidates
# (index type, create_index keyword arguments, the query settings tried on that one build)
KINDS: list[tuple[str, dict[str, Any], list[dict[str, int]]]] = [
    ("IVF_FLAT", {}, [{}]),
    ("IVF_SQ", {}, [{}, {"refine_factor": 2}, {"refine_factor": 4}]),
    ("IVF_PQ", {"num_sub_vectors": 48}, [{"refine_factor": 4}, {"refine_factor": 10}]),
    ("IVF_RQ", {}, [{"refine_factor": 4}]),
    ("IVF_HNSW_SQ", {"lists": "hnsw"}, [{"ef": 150}, {"ef": 300}]),
]



def recall_at_10(got: Any, q: np.ndarray, held: np.ndarray) -> float:
    """Of the 10 candidates nearest ``q`` by exact cosine, the share in the exact top 10 of
    all rows (``held``, row i is fact i + 1)."""
    vecs = np.asarray(got.column("vector").combine_chunks().flatten(),
                      np.float32).reshape(got.num_rows, -1)
    ns = np.asarray(got.column("n").to_pylist())
    top = set(ns[np.argsort(-(vecs @ q))[:10]].tolist())
    exact = set((np.argpartition(-(held @ q), 10)[:10] + 1).tolist())
    return len(top & exact) / 10

def lists(rows: int, kind: dict[str, Any]) -> int:
    """IVF lists: √rows as ``upkeep.index_lists``; an HNSW kind gets one list per ~64k rows
    (each list holds a graph; the probed lists are all of them at these sizes)."""
    from semmem.store.upkeep.indexes import index_lists

    return max(1, rows // 65_536) if kind.get("lists") == "hnsw" else index_lists(rows)


def build_table(path: Path, size: int, texts: list[str], vectors: np.ndarray) -> np.ndarray:
    """The table at ``path`` with ``size`` rows (written unless it is there); its vectors."""
    import lance

    noise = 0.02 if size > len(texts) else 0.0
    held = np.empty((size, vectors.shape[1]), np.float32)
    batches = []
    n = 0
    for bt, bv in expanded(texts[:size], vectors[:size], size, noise=noise, batch=25_000):
        held[n:n + len(bt)] = bv
        batches.append(pa.record_batch({
            "n": pa.array(np.arange(n + 1, n + len(bt) + 1, dtype=np.int64)),
            "text": pa.array(bt),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(bv.reshape(-1)), bv.shape[1]),
        }))
        n += len(bt)
    if not (path.exists() and lance.dataset(str(path)).count_rows() == size):
        t0 = time.perf_counter()
        lance.write_dataset(pa.Table.from_batches(batches), str(path), mode="overwrite",
                            max_rows_per_file=1 << 20)
        print(f"wrote {size:,} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return held


async def measure(path: Path, size: int, held: np.ndarray, qvecs: np.ndarray, warm: np.ndarray,
                  kind: str, kwargs: dict[str, Any], settings: list[dict[str, int]]
                  ) -> list[dict[str, Any]]:
    """Build one index kind on the table and time/score searches on it, per query setting
    (one build for all: IVF's k-means differs between builds, and so does recall)."""
    import lance
    import lancedb

    from semmem.store.upkeep.indexes import index_probes

    ds = lance.dataset(str(path))
    build = {k: v for k, v in kwargs.items() if k != "lists"}
    t0 = time.perf_counter()
    ds.create_index("vector", kind, name="vector_idx", metric="cosine",
                    num_partitions=lists(size, kwargs), replace=True, **build)
    build_s = time.perf_counter() - t0
    ds = lance.dataset(str(path))
    size_b = next(i.total_size_bytes or 0 for i in ds.describe_indices()
                  if i.name == "vector_idx")
    ds.cleanup_old_versions(older_than=__import__("datetime").timedelta(0))  # old index files
    db = await lancedb.connect_async(str(path.parent), session=lancedb.Session(
        index_cache_size_bytes=1 << 30, metadata_cache_size_bytes=1 << 28))
    tbl = await db.open_table(path.name.removesuffix(".lance"))

    async def search_one(q: np.ndarray, search: dict[str, int]) -> Any:
        s = (tbl.vector_search(q).column("vector").distance_type("cosine")
             .nprobes(index_probes(size)))
        if "refine_factor" in search:
            s = s.refine_factor(search["refine_factor"])
        if "ef" in search:
            s = s.ef(search["ef"])
        return await s.limit(CANDIDATES).select(["n", "text", "vector", "_distance"]).to_arrow()

    out = []
    for search in settings:
        for q in warm:
            await search_one(q, search)
        lat, hits = [], []
        for q in qvecs:
            t0 = time.perf_counter()
            got = await search_one(q, search)
            lat.append((time.perf_counter() - t0) * 1000)
            hits.append(recall_at_10(got, q, held))
        label = " ".join([kind, *(f"{k.split('_')[0]} {v}" for k, v in search.items())])
        out.append({"size": size, "kind": label, "build_s": round(build_s, 1),
                    "mb": round(size_b / 1e6, 1), "mb_per_million": round(size_b / size),
                    "p50": round(pct(lat, 0.5), 1), "p95": round(pct(lat, 0.95), 1),
                    "recall_at_10": round(float(np.mean(hits)), 3),
                    "probes": index_probes(size), "lists": lists(size, kwargs)})
    return out


async def tails(path: Path, size: int, held: np.ndarray, qvecs: np.ndarray, warm: np.ndarray,
                kind: str, steps: list[int], texts: list[str], vectors: np.ndarray) -> None:
    """Search latency and recall with unindexed rows beside a ``kind`` index; the fold."""
    import lance

    from semmem.store.upkeep.indexes import index_probes

    kwargs, settings = next((k, s) for t, k, s in KINDS if t == kind)
    built = await measure(path, size, held, qvecs, warm, kind, kwargs, settings[:1])
    base = lance.dataset(str(path)).version
    rng = np.random.default_rng(size + 1)
    added = np.zeros((0, held.shape[1]), np.float32)
    print(f"\n| rows | {kind}: unindexed rows | search p50 / p95 ms | recall@10 |")
    print("| --- | --- | --- | --- |")
    print(f"| {size:,} | 0 | {built[0]['p50']} / {built[0]['p95']} | "
          f"{built[0]['recall_at_10']} |", flush=True)
    try:
        for step in steps:
            while len(added) < step:
                k = min(1000, step - len(added))
                idx = rng.integers(0, len(texts), k)
                v = vectors[idx] + rng.normal(0, 0.02, (k, held.shape[1])).astype(np.float32)
                v /= np.linalg.norm(v, axis=1, keepdims=True)
                first = size + len(added) + 1
                lance.write_dataset(pa.table({
                    "n": pa.array(np.arange(first, first + k, dtype=np.int64)),
                    "text": pa.array([f"{texts[j]} [tail]" for j in idx.tolist()]),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.reshape(-1)),
                                                                v.shape[1]),
                }), str(path), mode="append")
                added = np.concatenate([added, v])
            r = await search_only(path, size, np.concatenate([held, added]), qvecs, warm,
                                  settings[0], index_probes(size))
            print(f"| {size:,} | {step:,} | {r[0]} / {r[1]} | {r[2]} |", flush=True)
        t0 = time.perf_counter()
        lance.dataset(str(path)).optimize.optimize_indices()
        ds = lance.dataset(str(path))
        segments = next(len(i.segments) for i in ds.describe_indices()
                        if i.name == "vector_idx")
        print(f"\nfolding {len(added):,} unindexed rows into the {kind} index of {size:,}: "
              f"{time.perf_counter() - t0:.1f} s ({segments} segment(s) after)", flush=True)
    finally:
        lance.dataset(str(path)).checkout_version(base).restore()  # type: ignore[no-untyped-call]


async def search_only(path: Path, size: int, held: np.ndarray, qvecs: np.ndarray,
                      warm: np.ndarray, search: dict[str, int], probes: int
                      ) -> tuple[float, float, float]:
    """p50, p95 (ms) and recall@10 of the searches on the table as it is."""
    import lancedb

    db = await lancedb.connect_async(str(path.parent), session=lancedb.Session(
        index_cache_size_bytes=1 << 30, metadata_cache_size_bytes=1 << 28))
    tbl = await db.open_table(path.name.removesuffix(".lance"))
    lat, hits = [], []
    for i, q in enumerate([*warm, *qvecs]):
        s = tbl.vector_search(q).column("vector").distance_type("cosine").nprobes(probes)
        if "refine_factor" in search:
            s = s.refine_factor(search["refine_factor"])
        t0 = time.perf_counter()
        got = await s.limit(CANDIDATES).select(["n", "text", "vector", "_distance"]).to_arrow()
        if i < len(warm):
            continue
        lat.append((time.perf_counter() - t0) * 1000)
        hits.append(recall_at_10(got, q, held))
    return round(pct(lat, 0.5), 1), round(pct(lat, 0.95), 1), round(float(np.mean(hits)), 3)


async def main() -> None:
    limit_blas_threads()
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--dir", required=True, help="a scratch folder for the stores")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--kinds", default="", help="index types to run, comma-separated")
    parser.add_argument("--tails", default="", help="unindexed rows to measure, e.g. 1000,5000")
    parser.add_argument("--tail-kind", default="IVF_SQ")
    args = parser.parse_args()
    from benchmarks.harness import open_encoder

    texts, vectors, _ = base_set(open_encoder("torch"))
    onnx = open_encoder("onnx")
    qvecs = np.asarray(onnx.embed_batch(queries(args.queries)), np.float32)
    warm = np.asarray(onnx.embed_batch(queries(20, offset=args.queries)), np.float32)
    wanted = {k.strip() for k in args.kinds.split(",") if k.strip()}
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    print("| rows | index kind | lists / probes | build s | size MB (per 1M rows) | "
          "search p50 / p95 ms | recall@10 |")
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for size in [int(s) for s in args.sizes.split(",")]:
        path = root / f"kinds_{size}.lance"
        held = build_table(path, size, texts, vectors)
        for kind, kwargs, settings in KINDS:
            if wanted and kind not in wanted:
                continue
            for r in await measure(path, size, held, qvecs, warm, kind, kwargs, settings):
                print(f"| {size:,} | {r['kind']} | {r['lists']} / "
                      f"{min(r['probes'], r['lists'])} | {r['build_s']} | {r['mb']} "
                      f"({r['mb_per_million']}) | {r['p50']} / {r['p95']} | "
                      f"{r['recall_at_10']} |", flush=True)
                print(r, file=sys.stderr, flush=True)
        if args.tails:
            await tails(path, size, held, qvecs, warm, args.tail_kind,
                        [int(t) for t in args.tails.split(",")], texts, vectors)

if __name__ == "__main__":
    asyncio.run(main())
