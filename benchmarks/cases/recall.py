"""Recall latency vs partition size, against the floor, through the core and over HTTP.

    python -m benchmarks recall --sizes 100,1000,10000 --reps 120
    python -m benchmarks recall --sizes 1000000 --reps 60 --keep DIR      # the store kept
    python -m benchmarks recall --served --sizes 1000 --reps 200 --remembers 100 --max-bytes 8192
    python -m benchmarks recall --served --sizes 10000 --reps 60 --remembers 20 --seconds 15

For each size: a partition written through ``Store.write`` with the real embeddings of the
base set (``benchmarks/vectors.py``; past 10k, copies of it with a small Gaussian
perturbation), in a temporary store or, with ``--keep DIR``, in ``DIR/recall-<size>``: the first
run writes the rows, builds the index, writes the tail and tags that version ``built``; a later
run restores the tagged version (one commit, no rewrite) and measures from the same state.
Every query text is distinct (no query cache). Measured in one run, per size and encoder:

- **floor**: the query's embedding on the same encoder (ONNX by default, as serving runs it)
  + a numpy brute-force scan (top 10) over the same vectors held in memory;
- **core**: ``Memory.recall(partition, query, 1024)`` p50/p95/p99, its breakdown (query
  embedding, store view, candidates, ranking, packing) step by step, a remember's steps, the
  recall right after a write and right after another replica's write;
- **HTTP** (``--http thread``, the default): the same recall as a provider request to the app
  served by uvicorn in this process, each request preceded by a floor query;
- past the index threshold: the index build time and recall@10 of the index vs exact search.

``--served`` measures instead what clients of ``semmem serve`` see while the memory is written
(the live path): the server in its own process on the bundled model (``--server-repo DIR``:
another checkout's), steady recall, remembers each followed by a recall, turns of 4 remembers
and an update, and with ``--seconds`` 8 writers at once (``recall_served``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cases.recall_after import after_writes
from benchmarks.harness import (
    PARTITION,
    fill,
    floor_ms,
    held_vectors,
    index_kind,
    kept,
    open_encoder,
    pct,
    queries,
    serve,
    tag_built,
    tail_rows,
    write_tail,
)
from benchmarks.vectors import base_set
from semmem.contract import MAX_SOURCES
from semmem.embedding.embedder import CachedEmbedder, Embedder
from semmem.items import Vectors
from semmem.memory import Memory, recall_candidates
from semmem.store import Store
from semmem.store.rows import RECALL_COLUMNS
from semmem.store.views import IndexedView

BUDGET = 1024
TAIL = 300  # rows written one per commit after the index build (serving's unindexed tail)
SMOKE = ["--sizes", "30", "--reps", "3", "--tail", "5"]


async def breakdown(memory: Memory, qs: list[str],
                    before: Callable[[int], Awaitable[Any]] | None = None) -> dict[str, float]:
    """Recall's steps timed one by one (the calls ``Memory.recall`` makes, the view read and
    the expired filter included in "view"), medians; ``before(i)`` (untimed) runs before the
    ``i``-th query: a write, for the after-write breakdown."""
    steps: dict[str, list[float]] = {k: [] for k in ("embed", "view", "candidates", "rank",
                                                     "pack")}
    for i, q in enumerate(qs):
        if before is not None:
            await before(i)
        t0 = time.perf_counter()
        qvec = (await memory.model.embed([q]))[0]
        t1 = time.perf_counter()
        snap = await memory.store.read_view(PARTITION)
        await memory.retention.hidden(snap)
        t2 = time.perf_counter()
        found = await memory.retention.nearest(
            snap, qvec, recall_candidates(BUDGET, memory.index_candidates), RECALL_COLUMNS)
        t3 = time.perf_counter()
        ranked = [s for s in memory.ranker.rank(found, qvec, q) if s.item.surfaced]
        t4 = time.perf_counter()
        memory.ranker.pack(found, ranked, BUDGET, MAX_SOURCES)
        t5 = time.perf_counter()
        for key, value in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4),
                              strict=True):
            steps[key].append(value * 1000)
    return {k: pct(v, 0.5) for k, v in steps.items()}


async def recall_at_10(memory: Memory, held: Vectors, reps: int) -> float:
    """Of the 10 nearest by exact search, the share among the candidates recall ranks."""
    view = await memory.store.read_view(PARTITION)
    if not isinstance(view, IndexedView):
        raise SystemExit("recall@10 is of an indexed partition")
    hits = []
    for q in queries(min(50, reps), offset=3 * reps):
        qv = (await memory.model.embed([q]))[0]
        exact = set((np.argpartition(-(held @ qv), 10)[:10] + 1).tolist())
        got = await memory.store.nearest(view, qv,
                                         recall_candidates(BUDGET, memory.index_candidates))
        top = np.argsort(-(got.vectors @ qv))[:10]
        hits.append(len(exact & {got.items[i].n for i in top}) / 10)
    return round(float(np.mean(hits)), 3)


def over_http(memory: Memory, embedder: Any, model: Embedder, held: Vectors,
              reps: int) -> dict[str, Any]:
    """The recall as a provider request to the app in this process, one client, each request
    preceded by a floor query (both see the same load)."""
    import httpx

    url, server = serve(memory, embedder)
    lat, paired = [], []
    try:
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": "Bearer bench"}) as client:
            for i, q in enumerate(queries(reps, offset=4 * reps)):
                paired.append(memory.model_executor.submit(
                    floor_ms, model, held, q + " (floor)").result())
                body = {"version": 1, "operation": "recall", "operationId": f"bench-{i}",
                        "partition": PARTITION, "access": "read",
                        "deadlineAt": _in_a_minute(), "input": {"text": q},
                        "maxBytes": BUDGET}
                t0 = time.perf_counter()
                r = client.post("/memory", content=json.dumps(body).encode(),
                                headers={"Content-Type": "application/json"})
                lat.append((time.perf_counter() - t0) * 1000)
                if r.status_code != 200:
                    raise SystemExit(f"recall over HTTP failed: {r.status_code} {r.text}")
    finally:
        server.should_exit = True
    return {"http": [pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)],
            "http_floor": pct(paired, 0.5),
            "http_ratio": round(pct(lat, 0.5) / pct(paired, 0.5), 2)}


def _in_a_minute() -> str:
    from tests.support.server import iso_in

    return iso_in(60)


async def run_size(model: Embedder, texts: list[str], vectors: Vectors, size: int,
                   args: argparse.Namespace, executor: ThreadPoolExecutor) -> dict[str, Any]:
    """Every figure for one partition size, recalls embedding with ``model``."""
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        tmp = keep / f"recall-{size}"
        tmp.mkdir(parents=True, exist_ok=True)
    else:
        tmp = Path(tempfile.mkdtemp(prefix=f"semmem-recall-{size}-"))
    indexed = size > args.threshold
    tail = args.tail if indexed else 0
    try:
        embedder = CachedEmbedder(model, size=0)  # no query cache: measure real embeddings
        reused = keep is not None and kept(tmp, size + tail)
        store = Store(str(tmp), dim=model.dim, model_id=model.model_id,
                      index_threshold=args.threshold)
        await store.open()
        memory = Memory(store, embedder, model_executor=executor)  # one model thread per run
        tail_texts, tail_vectors = tail_rows(texts, vectors, size, tail)
        out: dict[str, Any] = {"size": size, "encoder": getattr(model, "encoder", "?"),
                               "tail": tail, "reps": args.reps}
        if reused:
            held = held_vectors(texts, vectors, size)
            out["reused"] = True
        else:
            held, write_s = await fill(store, PARTITION, texts, vectors, size)
            out["write_s"] = round(write_s, 1)
            if indexed:
                t0 = time.perf_counter()
                out["index"] = await store.build_index(PARTITION)
                out["index_s"] = round(time.perf_counter() - t0, 1)
                out["tail_s"] = round(await write_tail(store, tail_texts, tail_vectors,
                                                       size + 1), 1)
            if keep is not None:
                tag_built(tmp)
        if indexed:
            out["index_kind"] = index_kind(tmp)
            # a routine pass, as the server runs one every ``compact_every`` writes
            await store.maintain(PARTITION, purge=False)
            held = np.concatenate([held, tail_vectors])  # the tail is searched exactly
        await memory.recall(PARTITION, "warm up the caches", BUDGET)
        floor = [executor.submit(floor_ms, model, held, q).result()
                 for q in queries(args.reps)]
        core = []
        for q in queries(args.reps, offset=args.reps):
            t0 = time.perf_counter()
            await memory.recall(PARTITION, q, BUDGET)
            core.append((time.perf_counter() - t0) * 1000)
        out["floor"] = [pct(floor, 0.5), pct(floor, 0.95), pct(floor, 0.99)]
        out["core"] = [pct(core, 0.5), pct(core, 0.95), pct(core, 0.99)]
        out["ratio"] = round(out["core"][0] / out["floor"][0], 2)
        out["breakdown"] = await breakdown(memory, queries(min(args.reps, 60),
                                                           offset=2 * args.reps))
        out["indexed"] = (await store.read_view(PARTITION)).indexed
        if out["indexed"]:
            out["recall_at_10"] = await recall_at_10(memory, held, args.reps)
        out.update(await after_writes(memory, embedder, tmp, args.reps, args.threshold, breakdown))
        out["after_write_ratio"] = round(out["recall_after_write_p50"] / out["core"][0], 2)
        out["after_other_ratio"] = round(out["recall_after_other_p50"] / out["core"][0], 2)
        if args.http == "thread":
            out.update(over_http(memory, embedder, model, held, args.reps))
        await store.close()
        return out
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def options(argv: list[str]) -> argparse.Namespace:
    """The case's arguments."""
    from semmem.store.upkeep.indexes import INDEX_THRESHOLD

    parser = argparse.ArgumentParser(prog="python -m benchmarks recall",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="facts, comma-separated")
    parser.add_argument("--reps", type=int, default=120, help="recalls per measure")
    parser.add_argument("--encoder", choices=["onnx", "torch", "both"], default="onnx")
    parser.add_argument("--threads", type=int, default=None, help="the encoder's threads")
    parser.add_argument("--http", choices=["thread", "none"], default="thread")
    parser.add_argument("--no-http", dest="http", action="store_const", const="none")
    parser.add_argument("--threshold", type=int, default=INDEX_THRESHOLD)
    parser.add_argument("--tail", type=int, default=TAIL,
                        help="rows written one per commit after the index build")
    parser.add_argument("--keep", "--store", dest="keep", default=None, metavar="DIR",
                        help="keep each size's store under DIR between runs")
    parser.add_argument("--served", action="store_true",
                        help="a `semmem serve` process instead (sizes, reps, --remembers)")
    parser.add_argument("--remembers", type=int, default=40, help="with --served")
    parser.add_argument("--max-bytes", type=int, default=1024, help="with --served")
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="with --served: 8 clients remembering for this long")
    parser.add_argument("--server-repo", type=Path, default=None, metavar="DIR",
                        help="with --served: the checkout whose code serves")
    return parser.parse_args(argv)


def cli(argv: list[str]) -> list[dict[str, Any]]:
    """Run the case; one figures dict per size and encoder."""
    args = options(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.served:
        from benchmarks.cases.recall_served import served

        return [served(size, args.reps, args.remembers, args.max_bytes, args.seconds,
                       args.server_repo) for size in sizes]
    from semmem.wiring import limit_blas_threads

    limit_blas_threads()  # as the server does (semmem.wiring.open_memory)
    names = ["torch", "onnx"] if args.encoder == "both" else [args.encoder]
    encoders = [open_encoder(name, args.threads) for name in names]
    texts, vectors, _ = base_set(encoders[-1], min(10_000, max(sizes)))
    executor = ThreadPoolExecutor(1, thread_name_prefix="bench-model")
    out = []
    try:
        for size in sizes:
            for encoder in encoders:
                out.append(asyncio.run(run_size(encoder, texts, vectors, size, args, executor)))
    finally:
        executor.shutdown()
    return out


def table(figures: list[dict[str, Any]]) -> str:
    """The Markdown table of docs/benchmarks.md ("Recall latency vs partition size")."""
    lines = ["| facts | floor p50/p95/p99 ms | core recall p50/p95/p99 ms | core/floor p50 | "
             "HTTP p50/p95/p99 ms | breakdown p50 ms: embed + view + candidates + rank + pack |"
             " notes |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in figures:
        if r.get("served"):
            lines.append(served_row(r))
            continue
        f = "/".join(f"{v:.1f}" for v in r["floor"])
        c = "/".join(f"{v:.1f}" for v in r["core"])
        h = "/".join(f"{v:.1f}" for v in r["http"]) if "http" in r else "–"
        if "http_ratio" in r:
            h += f" (**{r['http_ratio']}×** the floor interleaved: {r['http_floor']:.1f})"
        b = r["breakdown"]
        parts = (f"{b['embed']:.1f} + {b['view']:.2f} + {b['candidates']:.1f} + "
                 f"{b['rank']:.1f} + {b['pack']:.2f}")
        if "index_kind" in r:
            built = "kept store" if r.get("reused") else f"index built in {r['index_s']} s"
            notes = (f"{r['index_kind']} ({built}) + {r['tail']} unindexed rows, recall@10 "
                     f"{r.get('recall_at_10')}")
        else:
            notes = ("kept store; " if r.get("reused") else "") + (
                "indexed" if r.get("indexed") else "in memory")
        notes += (f"; remember p50 {r['remember_p50']:.0f} ms; recall right after a write p50 "
                  f"{r['recall_after_write_p50']:.0f} ms (**{r['after_write_ratio']}×** "
                  f"steady); after another replica's write p50 "
                  f"{r['recall_after_other_p50']:.0f} ms (**{r['after_other_ratio']}×**)")
        lines.append(f"| {r['size']:,} {r['encoder']} | {f} | {c} | **{r['ratio']}×** | {h} | "
                     f"{parts} | {notes} |")
    return "\n".join(lines)


def served_row(r: dict[str, Any]) -> str:
    """A ``--served`` result as a row of the table."""
    steady, after = r["steady_recall"], r["recall_after_remember"]
    notes = (f"remember p50 {r['remember']['p50_ms']} ms; recall right after a remember p50 "
             f"{after['p50_ms']} ms (**{r['after_remember_ratio']}×** steady); a turn of 4 "
             f"remembers + 1 update p50 {r['turn_4_remember_1_update']['p50_ms']} ms "
             f"(**{r['turn_ratio']}×** one remember)")
    if "burst_8_clients" in r:
        burst = r["burst_8_clients"]
        notes += (f"; 8 clients remembering **{burst['per_s']}/s** (p50 {burst['p50_ms']}, "
                  f"p95 {burst['p95_ms']} ms), then recall p50 "
                  f"{r['recall_after_burst']['p50_ms']} ms")
    return (f"| {r['size']:,} served | – | – | – | {steady['p50_ms']}/{steady['p95_ms']} "
            f"(p50/p95) | – | {notes} |")
