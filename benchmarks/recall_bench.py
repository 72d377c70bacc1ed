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

Past the threshold both sides carry an unindexed tail, as a serving process always has after
its first write: ``TAIL`` rows written one per commit after the index build (``--tail``), so the
steady recall searches them exactly beside the index as the recall right after a write does;
then a routine maintenance pass merges the tail's sealed fragments, as the server's scheduler
does every ``compact_every`` writes. A recall ranks ``recall_candidates(1024, 100)`` (50)
candidates, as ``Memory.recall`` does at that budget; recall@10 is over those.
The after-write side prints its own breakdown (embed + view, the count step included +
candidates + rank), each step timed right after a ``remember``.

``--store DIR`` keeps each size's store in ``DIR/recall-<size>`` between runs: the first run
writes the rows, builds the index, writes the tail and tags that version ``built``; a later run
restores the tagged version (one commit, no rewrite) and measures from the same state, so a 1M
run does not rebuild 1M rows and an index each time. (Built by older code, the store keeps the
index kind it was built with: the notes name it.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.factgen import QUERIES
from benchmarks.vectors import base_set, expanded
from semmem import tracing
from semmem.contract import MAX_SOURCES
from semmem.embedding.embedder import CachedEmbedder, Embedder
from semmem.embedding.files import default_model_dir
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.items import now_ms
from semmem.memory import Memory, recall_candidates
from semmem.store import ItemRow, Mutation, Store
from semmem.store.rows import RECALL_COLUMNS
from semmem.wiring import limit_blas_threads

BUDGET = 1024
TAIL = 300  # rows written one per commit after the index build (serving's unindexed tail)
BUILT = "built"  # the tag of a kept store's measured starting version
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
        snap = await memory.store.read_view("bench")
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


class Steps:
    """A tracer (``semmem.tracing.Tracer``) keeping each step span's milliseconds by name,
    while ``on``: what a remember's time goes to."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.on = False

    @contextlib.contextmanager
    def span(self, name: str, carrier: Any, server: bool) -> Iterator[tracing.Span]:
        t0 = time.perf_counter()
        try:
            yield tracing.OFF
        finally:
            if self.on:
                self.ms[name].append((time.perf_counter() - t0) * 1000)

    def trace_id(self) -> str | None:
        return None


def kept(path: Path, size: int) -> bool:
    """Whether a kept store at ``path`` holds the tagged starting version of ``size`` rows;
    if so, restores it (a new version with its content and indexes)."""
    import lance

    from semmem.store.rows import table_name

    table = path / f"{table_name('bench')}.lance"
    if not table.exists():
        return False
    ds = lance.dataset(str(table))
    if BUILT not in ds.tags.list() or ds.checkout_version(BUILT).count_rows() < size:
        return False
    ds.checkout_version(BUILT).restore()
    return True


def tag_built(path: Path) -> None:
    """Tag the latest version of the partition's table as the starting version."""
    import lance

    from semmem.store.rows import table_name

    ds = lance.dataset(str(path / f"{table_name('bench')}.lance"))
    ds.tags.create(BUILT, ds.version)


def index_kind(path: Path) -> str:
    """The vector index type of the partition's table ("" when none)."""
    import lance

    from semmem.store.rows import table_name

    ds = lance.dataset(str(path / f"{table_name('bench')}.lance"))
    stats = [i for i in ds.describe_indices() if i.name == "vector_idx"]
    return str(ds.stats.index_stats("vector_idx")["index_type"]) if stats else ""


def tail_rows(texts: list[str], vectors: np.ndarray, size: int, rows: int
              ) -> tuple[list[str], np.ndarray]:
    """The ``rows`` facts written after the first ``size``: base facts suffixed, their vectors
    perturbed as the copies are (distinct points near real ones)."""
    rng = np.random.default_rng(size)
    idx = rng.integers(0, len(texts), rows)
    out = vectors[idx] + rng.normal(0, 0.02, (rows, vectors.shape[1])).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return [f"{texts[j]} [tail {i}]" for i, j in enumerate(idx.tolist())], out


async def write_tail(store: Store, texts: list[str], vectors: np.ndarray, first: int) -> float:
    """The tail rows numbered from ``first``, one per commit (as ``remember`` writes them);
    returns seconds taken."""
    start = time.perf_counter()
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        ts = now_ms()
        row = ItemRow(first + i, text, vector, ts, ts, 1)
        await store.write("bench", lambda _v, r=row: Mutation(items=[r], hwm=r.n))
    return time.perf_counter() - start


async def run_size(model: Embedder, texts: list[str], vectors: np.ndarray,
                   size: int, reps: int, http: bool, threshold: int,
                   executor: ThreadPoolExecutor,
                   floor_model: Embedder | None = None, keep: Path | None = None,
                   tail: int = TAIL) -> dict[str, Any]:
    """Every figure for one partition size, recalls embedding with ``model``; ``keep``: the
    directory of kept stores (``--store``)."""
    floor_model = floor_model or model
    if keep is not None:
        tmp = keep / f"recall-{size}"
        tmp.mkdir(parents=True, exist_ok=True)
    else:
        tmp = Path(tempfile.mkdtemp(prefix=f"recall-{size}-", dir=Path.cwd() / "data"))
    indexed = size > threshold
    tail = tail if indexed else 0
    try:
        embedder = CachedEmbedder(model, size=0)  # no query cache: measure real embeddings
        reused = keep is not None and kept(tmp, size + tail)
        store = Store(str(tmp), dim=model.dim, model_id=model.model_id,
                      index_threshold=threshold)
        await store.open()
        memory = Memory(store, embedder, model_executor=executor)  # one model thread per run
        tail_texts, tail_vectors = tail_rows(texts, vectors, size, tail)
        out: dict[str, Any] = {"size": size, "encoder": getattr(model, "encoder", "?"),
                               "tail": tail}
        if reused:
            held = np.empty((size, vectors.shape[1]), np.float32)
            n = 0
            for _, batch in expanded(texts[:size], vectors[:size], size,
                                     noise=0.02 if size > len(texts) else 0.0, batch=25_000):
                held[n:n + len(batch)] = batch
                n += len(batch)
            out["reused"] = True
        else:
            held, write_s = await fill(store, "bench", texts, vectors, size)
            out["write_s"] = round(write_s, 1)
            if indexed:
                t0 = time.perf_counter()
                out["index"] = await store.build_index("bench")
                out["index_s"] = round(time.perf_counter() - t0, 1)
                out["tail_s"] = round(await write_tail(store, tail_texts, tail_vectors,
                                                       size + 1), 1)
            if keep is not None:
                tag_built(tmp)
        if indexed:
            out["index_kind"] = index_kind(tmp)
            # a routine pass, as the server runs one every ``compact_every`` writes: the tail's
            # sealed fragments merged (the rows stay unindexed, under the fold bound)
            await store.maintain("bench", purge=False)
            held = np.concatenate([held, tail_vectors])  # the tail is searched exactly
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
                got = await store.nearest(view, qv,
                                          recall_candidates(BUDGET, memory.index_candidates))
                top = np.argsort(-(got.vectors @ qv))[:10]
                hits.append(len(exact & {got.items[i].n for i in top}) / 10)
            out["recall_at_10"] = round(float(np.mean(hits)), 3)
        writes, after = [], []
        pairs = max(20, reps // 2)
        steps = Steps()
        tracing.install(steps)
        try:
            for i, q in enumerate(queries(pairs, offset=5 * reps)):
                steps.on = True
                t0 = time.perf_counter()
                await memory.remember("bench", f"new fact {i}: {q}")
                writes.append((time.perf_counter() - t0) * 1000)
                steps.on = False
                # the next turn's recall: a new table version (past the threshold: a new view)
                t0 = time.perf_counter()
                await memory.recall("bench", f"{q} again", BUDGET)
                after.append((time.perf_counter() - t0) * 1000)
        finally:
            tracing.install(None)
        out["remember_breakdown"] = {k: pct(v, 0.5) for k, v in steps.ms.items()}
        out["remember_p50"] = pct(writes, 0.5)
        out["recall_after_write_p50"] = pct(after, 0.5)
        out["after_write_ratio"] = round(out["recall_after_write_p50"] / out["core"][0], 2)
        later = queries(pairs, offset=6 * reps)

        async def write(i: int) -> None:
            await memory.remember("bench", f"another fact {i}: {later[i]}")

        out["after_write_breakdown"] = await breakdown(
            memory, [f"{q} once more" for q in later], before=write)
        # Another replica's write (a second store on the same directory, its own connection
        # and caches): this process's next recall meets a version it did not write.
        other = Store(str(tmp), dim=model.dim, model_id=model.model_id,
                      index_threshold=threshold)
        await other.open()
        replica = Memory(other, embedder, model_executor=executor)
        theirs = []
        for i, q in enumerate(queries(pairs, offset=7 * reps)):
            done = await replica.remember("bench", f"a replica's fact {i}: {q}")
            t0 = time.perf_counter()
            await memory.recall("bench", f"{q} seen", BUDGET)
            theirs.append((time.perf_counter() - t0) * 1000)
            assert (await store.read_view("bench")).hwm == done["n"]  # it saw the write
        more = queries(pairs, offset=8 * reps)

        async def replica_write(i: int) -> None:
            await replica.remember("bench", f"one more replica fact {i}: {more[i]}")

        out["after_other_breakdown"] = await breakdown(
            memory, [f"{q} seen again" for q in more], before=replica_write)
        await other.close()
        out["recall_after_other_p50"] = pct(theirs, 0.5)
        out["after_other_ratio"] = round(out["recall_after_other_p50"] / out["core"][0], 2)
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
        if keep is None:
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
    if "index_kind" in r:
        built = "kept store" if r.get("reused") else f"index built in {r['index_s']} s"
        extra = f"{r['index_kind']} ({built}) + {r['tail']} unindexed rows, recall@10 " \
            f"{r.get('recall_at_10')}"
    else:
        extra = "indexed" if r.get("indexed") else "in memory"
    a, o = r["after_write_breakdown"], r["after_other_breakdown"]
    w = r["remember_breakdown"]
    extra += f"; remember p50 {r['remember_p50']:.0f} ms (embed + hints + write view + " \
        f"commit: {w.get('semmem.embed', 0):.1f} + {w.get('semmem.hints', 0):.1f} + " \
        f"{w.get('semmem.write_view', 0):.1f} + {w.get('semmem.commit', 0):.1f})" \
        f"; recall right after a write p50 {r['recall_after_write_p50']:.0f} ms " \
        f"(**{r['after_write_ratio']}×** steady; {a['embed']:.1f} + {a['view']:.2f} + " \
        f"{a['candidates']:.1f} + {a['rank']:.1f}); after another replica's write p50 " \
        f"{r['recall_after_other_p50']:.0f} ms (**{r['after_other_ratio']}×** steady; " \
        f"{o['embed']:.1f} + {o['view']:.2f} + {o['candidates']:.1f} + {o['rank']:.1f})"
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
    parser.add_argument("--store", default=None,
                        help="keep each size's store under this directory between runs")
    parser.add_argument("--tail", type=int, default=TAIL,
                        help="rows written one per commit after the index build")
    args = parser.parse_args()
    from semmem.store.upkeep.indexes import INDEX_THRESHOLD

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
                               args.threshold or INDEX_THRESHOLD, executor, floor_model=model,
                               keep=Path(args.store) if args.store else None, tail=args.tail)
            print(row(r), flush=True)
            print(json.dumps(r), file=sys.stderr, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
