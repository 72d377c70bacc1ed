"""The two encoders of the bundled model, side by side in one process: torch vs ONNX Runtime;
with ``--e5``, the multilingual model on ONNX Runtime (and ``--engine``: its C engine) too.

    .venv/bin/python -m benchmarks encoders --rounds 5
    .venv/bin/python -m benchmarks encoders --torch-threads '' --onnx-threads 1 --e5 \
        --engine --clients 1,8 --rounds 5          # MiniLM vs e5 (vs e5.c), one thread each
    .venv/bin/python -m benchmarks encoders --torch-threads '' --onnx-threads 1 \
        --file old=/path/to/other/model.onnx     # the installed ONNX file against another one

Every figure is measured for each encoder configuration in the same run, the configurations
interleaved round by round (the machine is shared: quote the ratios). Every model call runs on
one dedicated thread, as the core runs it (``Memory.model_executor``), and every text is
distinct. Measured:

- **query**: one text per call (what a recall embeds; e5 with its ``query: `` side), p50 over
  the rounds;
- **batch**: 64 documents per call (what import and reindex do), texts/s;
- **clients**: 1, 8 and 32 concurrent clients each embedding single queries through
  ``Memory``'s batcher (texts arriving while the model is busy go together in the next call),
  queries/s and p50 latency; plus, for ONNX, the design the core does not use: two model
  threads without the batcher (``--two-threads``);
- **import**: ``Memory.import_`` of fresh facts into a temp LanceDB store, facts/s.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.factgen import facts
from benchmarks.harness import pct, queries
from semmem.embedding.embedder import Embedder, embed_queries
from semmem.embedding.files import check_onnx, default_model_dir, load_spec, verify
from semmem.embedding.onnx import OnnxEmbedder
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.items import Vectors
from semmem.memory import Memory
from semmem.store import Store
from semmem.wiring import limit_blas_threads


class Config:
    """One encoder configuration with its own model thread."""

    def __init__(self, name: str, model: Embedder, before: Callable[[], None]) -> None:
        self.name = name
        self.model = model
        self.before = before  # torch's thread count is per process: set it before each block
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"model-{name}")
        self.figures: dict[str, list[float]] = {}

    def add(self, key: str, value: float) -> None:
        self.figures.setdefault(key, []).append(value)

    def call(self, texts: list[str], query: bool = False) -> float:
        """Seconds one ``embed_batch`` (``query``: one query embedding) takes on this
        configuration's model thread."""
        def timed() -> float:
            t0 = time.perf_counter()
            if query:
                embed_queries(self.model, texts)
            else:
                self.model.embed_batch(texts)
            return time.perf_counter() - t0
        return self.executor.submit(timed).result()


class _Engine:
    """e5's own C engine (compiled here, one thread) as an embedder, for the side by side."""

    def __init__(self, folder: Path) -> None:
        from semmem.embedding.engine import CEngine

        self._engine = CEngine(folder, load_spec(folder).weights)
        self.model_id, self.dim = "e5.c", self._engine.dim

    def embed_batch(self, texts: list[str]) -> Vectors:
        return self._engine.embed(texts, query=False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self._engine.embed(texts, query=True)


def e5_configs(folder: Path, onnx_threads: list[int | None], engine: bool) -> list[Config]:
    """The multilingual model on ONNX Runtime at each thread count, and its C engine."""
    from semmem.embedding.e5 import E5Embedder

    spec = verify(folder)
    out = [Config(f"e5 t{t}" if t else "e5 default", E5Embedder(spec, check_onnx(spec),
                                                                threads=t), lambda: None)
           for t in onnx_threads]
    if engine:
        out.append(Config("e5.c t1", _Engine(folder), lambda: None))
    return out


def configs(torch_threads: list[int], onnx_threads: list[int | None],
            files: dict[str, Path] | None = None) -> list[Config]:
    """torch at each thread count (one model, threads set per block) and ONNX sessions: of the
    installed file, and of each of ``files`` (label → another ONNX file of the same model)."""
    folder = default_model_dir()
    out = []
    if torch_threads:
        import torch

        torch_model = SentenceTransformerEmbedder(folder)
        for n in torch_threads:
            threads = functools.partial(torch.set_num_threads, n)
            out.append(Config(f"torch t{n}", torch_model, threads))
    spec = verify(folder, weights=False)
    for label, path in {"onnx": check_onnx(spec), **(files or {})}.items():
        for t in onnx_threads:  # None: the default (1 thread, one per core past 32 texts)
            name = f"{label} t{t}" if t else f"{label} default"
            out.append(Config(name, OnnxEmbedder(spec, path, threads=t), lambda: None))
    return out


async def clients_round(config: Config, memory: Memory, clients: int, texts: list[str],
                        two_threads: ThreadPoolExecutor | None = None) -> tuple[float, float]:
    """``clients`` concurrent clients embedding ``texts`` one each; (queries/s, p50 ms)."""
    pending = list(texts)
    lat: list[float] = []
    loop = asyncio.get_running_loop()

    async def client() -> None:
        while pending:
            text = pending.pop()
            t0 = time.perf_counter()
            if two_threads is None:
                await memory.model.embed([text], query=True)
            else:
                await loop.run_in_executor(two_threads, embed_queries, config.model, [text])
            lat.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return len(texts) / (time.perf_counter() - t0), pct(lat, 0.5)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    limit_blas_threads()  # as the server does (semmem.wiring.open_memory)
    files = {label: Path(path) for label, path in (f.split("=", 1) for f in args.file)}
    all_configs = configs([int(t) for t in args.torch_threads.split(",") if t],
                          [None if t == "default" else int(t)
                           for t in args.onnx_threads.split(",")], files)
    if args.e5:
        all_configs += e5_configs(args.e5, [None if t == "default" else int(t)
                                            for t in args.onnx_threads.split(",")], args.engine)
    docs = facts(64 * args.rounds * len(all_configs) + 64, seed=5)
    offset = 0
    levels = [int(c) for c in args.clients.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, dim=384, model_id=all_configs[0].model.model_id)
        await store.open()
        memories = {c.name: Memory(store, c.model, model_executor=c.executor)
                    for c in all_configs}
        pair = ThreadPoolExecutor(2, thread_name_prefix="two-threads")
        for c in all_configs:  # warm up
            c.before()
            c.call(docs[:64])
            c.call(["warm up"], query=True)
        for r in range(args.rounds):
            for c in all_configs:
                c.before()
                for q in queries(args.queries, offset=offset):
                    c.add("query", c.call([q], query=True) * 1000)
                offset += args.queries
                batch = docs[64 * (r * len(all_configs) + all_configs.index(c)):][:64]
                c.add("batch", 64 / c.call(batch))
                for n in levels:
                    texts = queries(args.per_level, offset=offset)
                    offset += args.per_level
                    qps, p50 = await clients_round(c, memories[c.name], n, texts)
                    c.add(f"c{n} qps", qps)
                    c.add(f"c{n} p50", p50)
                    if args.two_threads and c.name.startswith("onnx"):
                        texts = queries(args.per_level, offset=offset)
                        offset += args.per_level
                        qps, p50 = await clients_round(c, memories[c.name], n, texts, pair)
                        c.add(f"c{n} qps 2thr", qps)
                        c.add(f"c{n} p50 2thr", p50)
                if args.import_facts:
                    fresh = [f"{t} (import {r}-{c.name})"
                             for t in facts(args.import_facts, seed=100 + r)]
                    t0 = time.perf_counter()
                    await memories[c.name].import_(f"imp-{r}-{c.name}", [{"text": t}
                                                                          for t in fresh])
                    c.add("import", len(fresh) / (time.perf_counter() - t0))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        await store.close()
    return {c.name: {k: pct(v, 0.5) for k, v in c.figures.items()} for c in all_configs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=40, help="single queries per round")
    parser.add_argument("--per-level", type=int, default=128,
                        help="queries per concurrency level per round")
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--torch-threads", default="2,1")
    parser.add_argument("--onnx-threads", default="default,1,2")
    parser.add_argument("--two-threads", action="store_true")
    parser.add_argument("--file", action="append", default=[], metavar="LABEL=PATH",
                        help="also run this ONNX file of the same model (repeatable)")
    parser.add_argument("--import-facts", type=int, default=0)
    parser.add_argument("--e5", type=Path, nargs="?", const=default_model_dir().parent
                        / "multilingual-e5-small", default=None,
                        help="also the multilingual model (this folder) at the ONNX threads")
    parser.add_argument("--engine", action="store_true", help="and e5's C engine (with --e5)")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps(result), file=sys.stderr)
    names = list(result)
    ref = result[names[0]]
    keys = list(ref)
    print("| measure (median of rounds) | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for key in keys:
        cells = []
        for n in names:
            v = result[n].get(key)
            if v is None:
                cells.append("–")
                continue
            ratio = v / ref[key] if ref.get(key) else 0
            cells.append(f"{v:.1f}" + ("" if n == names[0] else f" ({ratio:.2f}×)"))
        print(f"| {key} | " + " | ".join(cells) + " |")
    for key in dict.fromkeys(k for n in names for k in result[n] if k not in keys):
        print(f"| {key} | " + " | ".join(f"{result[n].get(key, 0):.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()
