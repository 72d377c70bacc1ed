"""The set-up the cases share: the model (the bundled ONNX model where the model is measured,
the fake embedder where it is not), a store of N facts written through ``Store.write``
(optionally kept between runs), a provider server in this process, and the floor (one query
embedding and a brute-force scan)."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.factgen import QUERIES
from benchmarks.vectors import expanded
from semmem import tracing
from semmem.embedding.embedder import Embedder
from semmem.items import Vectors, now_ms
from semmem.store import ItemRow, Mutation, Store

PARTITION = "bench"
BUILT = "built"  # the tag of a kept store's measured starting version
SUFFIXES = ["", " please", " again", " now", " today", " exactly", " in short", " quickly",
            " for me", " if any", " recently", " lately"]


# ---- figures ------------------------------------------------------------------------------

def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def queries(count: int, offset: int = 0) -> list[str]:
    """``count`` distinct realistic queries (no two served by a query cache)."""
    out = []
    for i in range(offset, offset + count):
        base = QUERIES[i % len(QUERIES)]
        out.append(base + SUFFIXES[(i // len(QUERIES)) % len(SUFFIXES)]
                   + (f" ({i})" if i >= len(QUERIES) * len(SUFFIXES) else ""))
    return out


# ---- the model ----------------------------------------------------------------------------

def open_encoder(name: str, threads: int | None = None) -> Embedder:
    """``onnx`` (the bundled model as serving runs it), ``torch`` (the reference encoder, with
    the dev extra) or ``fake`` (the hashing embedder, for cases that do not measure the model);
    loaded once per process (the cases of one smoke run share it). A smoke run's torch takes
    one thread unless told: two, on a machine whose cores are busy, wait on each other (a
    query took 0.3-0.9 s at load 7, against 10 ms on one thread)."""
    if name == "torch" and threads is None and os.environ.get("SEMMEM_BENCH_SMOKE"):
        threads = 1
    return _encoder(name, threads)


@functools.cache
def _encoder(name: str, threads: int | None) -> Embedder:
    if name == "fake":
        from semmem.embedding.fakes import HashingEmbedder

        return HashingEmbedder()
    from semmem.embedding.files import default_model_dir

    if name == "torch":
        from semmem.embedding.reference import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(default_model_dir(), threads=threads)
    from semmem.embedding.onnx import OnnxEmbedder

    return OnnxEmbedder.load(default_model_dir(), threads=threads)


def floor_ms(model: Embedder, held: Vectors, query: str) -> float:
    """The floor of one recall: the query's embedding and a brute-force scan for its 10
    nearest over ``held`` (the same vectors, in memory), in milliseconds."""
    t0 = time.perf_counter()
    qv = model.embed_batch([query])[0]
    scores = held @ qv
    np.argpartition(-scores, min(10, len(held) - 1))[:10]
    return (time.perf_counter() - t0) * 1000


# ---- a store of N facts -------------------------------------------------------------------

async def fill(store: Store, partition: str, texts: list[str], vectors: Vectors,
               size: int) -> tuple[Vectors, float]:
    """Write ``size`` rows through ``Store.write`` (the base set cycled past its length, the
    copies perturbed); returns the vectors and seconds taken."""
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
        n += len(rows)
        await store.write(partition, mutation(rows, n))
    return held, time.perf_counter() - start


def mutation(rows: list[ItemRow], hwm: int | None = None) -> Callable[[Any], Mutation]:
    """A write of ``rows`` (that raises the partition's high-water mark to ``hwm``): what
    ``Store.write`` takes, whatever the version it decides on."""
    def mutate(_snapshot: Any) -> Mutation:
        return Mutation(items=rows, hwm=hwm)

    return mutate


def held_vectors(texts: list[str], vectors: Vectors, size: int) -> Vectors:
    """The vectors ``fill`` writes for ``size`` rows, without writing them (a kept store)."""
    held = np.empty((size, vectors.shape[1]), np.float32)
    n = 0
    for _, batch in expanded(texts[:size], vectors[:size], size,
                             noise=0.02 if size > len(texts) else 0.0, batch=25_000):
        held[n:n + len(batch)] = batch
        n += len(batch)
    return held


def _dataset(path: Path) -> Any:
    import lance

    from semmem.store.rows import table_name

    return lance.dataset(str(path / f"{table_name(PARTITION)}.lance"))


def kept(path: Path, size: int) -> bool:
    """Whether a kept store at ``path`` holds the tagged starting version of at least ``size``
    rows; if so, restores it (a new version with its content and indexes, no rewrite)."""
    from semmem.store.rows import table_name

    if not (path / f"{table_name(PARTITION)}.lance").exists():
        return False
    ds = _dataset(path)
    if BUILT not in ds.tags.list() or ds.checkout_version(BUILT).count_rows() < size:
        return False
    ds.checkout_version(BUILT).restore()
    return True


def tag_built(path: Path) -> None:
    """Tag the latest version of the partition's table as the starting version."""
    ds = _dataset(path)
    ds.tags.create(BUILT, ds.version)


def index_kind(path: Path) -> str:
    """The vector index type of the partition's table ("" when none)."""
    ds = _dataset(path)
    stats = [i for i in ds.describe_indices() if i.name == "vector_idx"]
    return str(ds.stats.index_stats("vector_idx")["index_type"]) if stats else ""


def tail_rows(texts: list[str], vectors: Vectors, size: int, rows: int
              ) -> tuple[list[str], Vectors]:
    """The ``rows`` facts written after the first ``size``: base facts suffixed, their vectors
    perturbed as the copies are (distinct points near real ones)."""
    rng = np.random.default_rng(size)
    idx = rng.integers(0, len(texts), rows)
    out = vectors[idx] + rng.normal(0, 0.02, (rows, vectors.shape[1])).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return [f"{texts[j]} [tail {i}]" for i, j in enumerate(idx.tolist())], out


async def write_tail(store: Store, texts: list[str], vectors: Vectors, first: int) -> float:
    """The tail rows numbered from ``first``, one per commit (as ``remember`` writes them);
    returns seconds taken."""
    start = time.perf_counter()
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        ts = now_ms()
        row = ItemRow(first + i, text, vector, ts, ts, 1)
        await store.write(PARTITION, mutation([row], row.n))
    return time.perf_counter() - start


# ---- a server -----------------------------------------------------------------------------

def serve(memory: Any, embedder: Any) -> tuple[str, Any]:
    """The provider app over ``memory`` on a free loopback port, in a thread of this process
    (token ``bench``); returns its URL and the uvicorn server (set ``should_exit`` to stop)."""
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
    while not server.started and thread.is_alive():
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", server


async def seed_partition(data: Path, size: int) -> None:
    """``size`` facts with real embeddings (the cached benchmark base set), through the store,
    then one maintenance pass (a compacted partition, as after an import)."""
    from benchmarks.vectors import base_set
    from semmem.memory import Memory

    model = open_encoder("torch")
    texts, vectors, _ = base_set(model, max(size, 10_000))
    memory = await Memory.open(str(data), model)
    await fill(memory.store, PARTITION, texts, vectors, size)
    await memory.maintain(PARTITION)
    await memory.close()


def serve_tree(data: Path, port: int, repo: Path, log: Path,
          argv: tuple[str, ...] = ("-m", "semmem.cli", "serve")) -> subprocess.Popen[bytes]:
    """``semmem serve`` of ``repo``'s code on ``data`` (or Python with ``argv`` that serves
    it), ready, in its own process (``tests.support.server`` serves only this checkout's code:
    ``-m`` puts the working directory first on the path)."""
    import httpx

    from tests.support.server import REPO, TOKEN
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SEMMEM_")
           or k in ("SEMMEM_MODEL", "SEMMEM_ENCODER", "SEMMEM_TORCH_THREADS")}
    env.update({"SEMMEM_TOKENS": TOKEN, "SEMMEM_DATA": str(data), "SEMMEM_PORT": str(port),
                "SEMMEM_LOG_LEVEL": "warning", "PYTHONPATH": str(repo),
                "SEMMEM_MODEL": env.get("SEMMEM_MODEL",
                                        str(REPO / "models" / "all-MiniLM-L6-v2"))})
    with log.open("w") as sink:
        server = subprocess.Popen([sys.executable, *argv], cwd=repo,
                                  env=env, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"server did not start:\n{log.read_text()}")
        time.sleep(0.2)


# ---- where a step's time goes ---------------------------------------------------------------

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
