"""Recall latency vs partition size, against the floor, through the core and over HTTP.

    .venv/bin/python benchmarks/recall_bench.py --sizes 100,1000,10000,100000,1000000
    .venv/bin/python benchmarks/recall_bench.py --sizes 10000 --encoder both

For each size: a fresh partition in a temp LanceDB store, written through the store layer with
the real embeddings of the 10k base set (``benchmarks/vectors.py``; past 10k, copies of it with
a small Gaussian perturbation, say so when quoting). Queries always go through the real model,
and every query text is distinct (no query cache). Measured in one run, per size:

- **floor**: ``model.encode(query)`` on torch (sentence-transformers, the reference encoder)
  + a numpy brute-force scan (``vectors @ q``, top 10) over the same vectors held in memory;
  the core and HTTP figures use ``--encoder`` (``torch``, ``onnx`` or ``both``, one after the
  other for each size, each against a floor measured just before it);
- **core**: ``Memory.recall(partition, query, 1024)`` p50/p95/p99, and its breakdown (query
  embedding, store view, index candidates, ranking, packing) timed step by step;
- **HTTP**: the same recall as a provider request to ``semmem.web.app.create_app`` served by
  uvicorn on 127.0.0.1 in this process, one client; each request preceded by a floor query,
  and the HTTP p50 quoted against those interleaved floor queries' p50;
- past the index threshold: the index build time and recall@10 of the index vs exact search.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.factgen import QUERIES
from benchmarks.vectors import base_set, expanded
from semmem.contract import MAX_SOURCES
from semmem.embedding.embedder import CachedEmbedder, Embedder
from semmem.embedding.files import default_model_dir
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.items import now_ms
from semmem.memory import Memory
from semmem.store import ItemRow, Mutation, Store
from semmem.wiring import limit_blas_threads

BUDGET = 1024
SUFFIXES = ["", " please", " again", " now", " today", " exactly", " in short", " quickly",
            " for me", " if any", " recently", " lately"]


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def queries(count: int, offset: int = 0) -> list[str]:
    """``count`` distinct realistic queries."""
    out = []
    for i in range(offset, offset + count):
        base = QUERIES[i % len(QUERIES)]
        out.append(base + SUFFIXES[(i // len(QUERIES)) % len(SUFFIXES)]
                   + (f" ({i})" if i >= len(QUERIES) * len(SUFFIXES) else ""))
    return out


async def fill(store: Store, partition: str, texts: list[str], vectors: np.ndarray,
               size: int) -> tuple[np.ndarray, float]:
    """Write ``size`` rows through ``Store.write``; returns the vectors and seconds taken."""
    noise = 0.02 if size > len(texts) else 0.0
    held = np.empty((size, vectors.shape[1]), np.float32)
    start = time.perf_counter()
    n = 0
    for batch_texts, batch_vectors in expanded(texts[:size], vectors[:size], size, noise=noise,
                                               batch=25_000):
        ts = now_ms()
        rows = [ItemRow(n + i + 1, t, v, ts, ts, 1)
                for i, (t, v) in enumerate(zip(batch_texts, batch_vectors, strict=True))]
        held[n:n + len(rows)] = batch_vectors
        hwm = n + len(rows)
        await store.write(partition, lambda _s, r=rows, h=hwm: Mutation(items=r, hwm=h))
        n = hwm
    return held, time.perf_counter() - start


def serve(memory: Memory, embedder: Any) -> tuple[str, Any]:
    """The provider app over ``memory`` on a free loopback port, in a thread."""
    import uvicorn

    from semmem.settings import Settings
    from semmem.web.app import create_app
    from tests.support.server import free_port

    port = free_port()
    settings = Settings(data="unused", tokens="bench", insecure=False, host="127.0.0.1",
                        port=port, max_concurrency=64)
    app = create_app(settings, embedder=embedder, memory=memory)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


def body(query: str, i: int) -> dict[str, Any]:
    """A recall request envelope."""
    from tests.support.server import iso_in

    return {"version": 1, "operation": "recall", "operationId": f"bench-{i}",
            "partition": "bench", "access": "read", "deadlineAt": iso_in(60),
            "input": {"text": query}, "maxBytes": BUDGET}


async def breakdown(memory: Memory, qs: list[str]) -> dict[str, float]:
    """Recall's steps timed one by one (the same calls ``Memory.recall`` makes), medians."""
    steps: dict[str, list[float]] = {k: [] for k in ("embed", "view", "candidates", "rank",
                                                     "pack")}
    for q in qs:
        t0 = time.perf_counter()
        qvec = (await memory.model.embed([q]))[0]
        t1 = time.perf_counter()
        snap = await memory.store.read_view("bench")
        t2 = time.perf_counter()
        if snap.indexed:
            snap = await memory.store.nearest(snap, qvec, memory.index_candidates)
        t3 = time.perf_counter()
        ranked = [s for s in memory.ranker.rank(snap, qvec, q) if s.item.surfaced]
        t4 = time.perf_counter()
        memory.ranker.pack(snap, ranked, BUDGET, MAX_SOURCES)
        t5 = time.perf_counter()
        for key, value in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4),
                              strict=True):
            steps[key].append(value * 1000)
    return {k: pct(v, 0.5) for k, v in steps.items()}


async def run_size(model: Embedder, texts: list[str], vectors: np.ndarray,
                   size: int, reps: int, http: bool, threshold: int,
                   executor: ThreadPoolExecutor,
                   floor_model: Embedder | None = None) -> dict[str, Any]:
    """Every figure for one partition size, recalls embedding with ``model``."""
    floor_model = floor_model or model
    tmp = Path(tempfile.mkdtemp(prefix=f"recall-{size}-", dir=Path.cwd() / "data"))
    try:
        embedder = CachedEmbedder(model, size=0)  # no query cache: measure real embeddings
        store = Store(str(tmp), dim=model.dim, model_id=model.model_id,
                      index_threshold=threshold)
        await store.open()
        memory = Memory(store, embedder, model_executor=executor)  # one model thread per run
        held, write_s = await fill(store, "bench", texts, vectors, size)
        out: dict[str, Any] = {"size": size, "write_s": round(write_s, 1),
                               "encoder": getattr(model, "encoder", "?")}
        if size > threshold:
            t0 = time.perf_counter()
            out["index"] = await store.build_index("bench")
            out["index_s"] = round(time.perf_counter() - t0, 1)
        await memory.recall("bench", "warm up the caches", BUDGET)
        qs = queries(reps)
        # floor: encode + brute-force numpy scan over the same vectors
        floor = []
        loop = asyncio.get_running_loop()
        for q in qs:
            # on the thread the core runs the model on: torch is slower on a second thread
            t0 = time.perf_counter()
            qv = (await loop.run_in_executor(memory.model_executor, floor_model.embed_batch,
                                             [q]))[0]
            scores = held @ qv
            np.argpartition(-scores, min(10, size - 1))[:10]
            floor.append((time.perf_counter() - t0) * 1000)
        core = []
        for q in queries(reps, offset=reps):
            t0 = time.perf_counter()
            await memory.recall("bench", q, BUDGET)
            core.append((time.perf_counter() - t0) * 1000)
        out["floor"] = [pct(floor, 0.5), pct(floor, 0.95), pct(floor, 0.99)]
        out["core"] = [pct(core, 0.5), pct(core, 0.95), pct(core, 0.99)]
        out["ratio"] = round(out["core"][0] / out["floor"][0], 2)
        out["breakdown"] = await breakdown(memory, queries(min(reps, 60), offset=2 * reps))
        view = await store.read_view("bench")
        out["indexed"] = view.indexed
        if view.indexed:  # recall@10 of the index vs exact search, on real query embeddings
            hits = []
            for q in queries(50, offset=3 * reps):
                qv = (await memory.model.embed([q]))[0]
                exact = set((np.argpartition(-(held @ qv), 10)[:10] + 1).tolist())
                # the candidates recall ranks; their 10 nearest by exact cosine
                got = await store.nearest(view, qv, memory.index_candidates)
                top = np.argsort(-(got.vectors @ qv))[:10]
                hits.append(len(exact & {got.items[i].n for i in top}) / 10)
            out["recall_at_10"] = round(float(np.mean(hits)), 3)
        writes, after = [], []
        for i, q in enumerate(queries(20, offset=5 * reps)):
            t0 = time.perf_counter()
            await memory.remember("bench", f"new fact {i}: {q}")
            writes.append((time.perf_counter() - t0) * 1000)
            # the next turn's recall: a new table version, so the snapshot and BM25 are rebuilt
            t0 = time.perf_counter()
            await memory.recall("bench", f"{q} again", BUDGET)
            after.append((time.perf_counter() - t0) * 1000)
        out["remember_p50"] = pct(writes, 0.5)
        out["recall_after_write_p50"] = pct(after, 0.5)
        if http:
            import httpx

            url, server = serve(memory, embedder)
            lat, paired = [], []
            with httpx.Client(base_url=url, timeout=30,
                              headers={"Authorization": "Bearer bench"}) as client:
                for i, q in enumerate(queries(reps, offset=4 * reps)):
                    # a floor query right before each request, so both see the same load
                    t0 = time.perf_counter()
                    qv = memory.model_executor.submit(floor_model.embed_batch,
                                                      [q + " (floor)"]).result()[0]
                    np.argpartition(-(held @ qv), min(10, size - 1))[:10]
                    paired.append((time.perf_counter() - t0) * 1000)
                    payload = json.dumps(body(q, i)).encode()
                    t0 = time.perf_counter()
                    r = client.post("/memory", content=payload,
                                    headers={"Content-Type": "application/json"})
                    lat.append((time.perf_counter() - t0) * 1000)
                    assert r.status_code == 200, r.text
            server.should_exit = True
            out["http"] = [pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)]
            out["http_floor"] = pct(paired, 0.5)
            out["http_ratio"] = round(out["http"][0] / out["http_floor"], 2)
        await store.close()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def row(r: dict[str, Any]) -> str:
    """One Markdown table row."""
    f = "/".join(f"{v:.1f}" for v in r["floor"])
    c = "/".join(f"{v:.1f}" for v in r["core"])
    h = "/".join(f"{v:.1f}" for v in r["http"]) if "http" in r else "–"
    if "http_ratio" in r:
        h += f" (**{r['http_ratio']}×** the floor interleaved: {r['http_floor']:.1f})"
    b = r["breakdown"]
    parts = f"{b['embed']:.1f} + {b['view']:.2f} + {b['candidates']:.1f} + {b['rank']:.1f} + " \
            f"{b['pack']:.2f}"
    extra = f"index built in {r['index_s']} s, recall@10 {r.get('recall_at_10')}" \
        if "index_s" in r else ("indexed" if r.get("indexed") else "in memory")
    extra += f"; remember p50 {r['remember_p50']:.0f} ms" \
        f"; recall right after a write p50 {r['recall_after_write_p50']:.0f} ms"
    size = f"{r['size']:,} {r['encoder']}"
    return f"| {size} | {f} | {c} | **{r['ratio']}×** | {h} | {parts} | {extra} |"


async def main() -> None:
    limit_blas_threads()  # as the server does (semmem.wiring.open_memory)
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--reps", type=int, default=120)
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--threshold", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--encoder", choices=["torch", "onnx", "both"], default="torch")
    args = parser.parse_args()
    from semmem.store.upkeep import INDEX_THRESHOLD

    model = SentenceTransformerEmbedder(default_model_dir(), threads=args.threads)
    encoders: list[Embedder] = []
    if args.encoder in ("torch", "both"):
        encoders.append(model)
    if args.encoder in ("onnx", "both"):
        from semmem.embedding.onnx import OnnxEmbedder

        encoders.append(OnnxEmbedder.load(default_model_dir(), threads=args.threads))
    executor = ThreadPoolExecutor(1, thread_name_prefix="bench-model")
    texts, vectors, _ = base_set(model)
    (Path.cwd() / "data").mkdir(exist_ok=True)
    print("| facts | floor p50/p95/p99 ms | core recall p50/p95/p99 ms | core/floor p50 | "
          "HTTP p50/p95/p99 ms | breakdown p50 ms: embed + view + candidates + rank + pack | "
          "notes |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for size in [int(s) for s in args.sizes.split(",")]:
        for encoder in encoders:
            r = await run_size(encoder, texts, vectors, size, args.reps, not args.no_http,
                               args.threshold or INDEX_THRESHOLD, executor, floor_model=model)
            print(row(r), flush=True)
            print(json.dumps(r), file=sys.stderr, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
