"""Core figures of the foundation: write/recall latency, import throughput, forget-to-gone.

Run: .venv/bin/python benchmarks/core_bench.py [--sizes 1000,10000]
Real bundled model, real LanceDB in a temp directory. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.factgen import QUERIES, facts
from semmem.embedding.embedder import CachedEmbedder
from semmem.embedding.files import default_model_dir
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.memory import Memory, QuietObserver
from semmem.scheduling.maintainer import Maintainer
from semmem.store import Store


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(sizes: list[int]) -> None:
    model = SentenceTransformerEmbedder(default_model_dir())
    embedder = CachedEmbedder(model, size=0)  # no query cache: measure real embeddings
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, dim=model.dim, model_id=model.model_id)
        await store.open()
        mem = Memory(store, embedder)

        # import throughput vs raw batch embedding
        base = facts(max(sizes))
        sample = base[:1000]
        t0 = time.perf_counter()
        model.embed_batch(sample)
        raw = len(sample) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        await mem.import_("import", [{"text": t} for t in sample])
        imp = len(sample) / (time.perf_counter() - t0)
        rows.append(("raw batch embedding (1k facts)", f"{raw:.0f} facts/s"))
        rows.append(("import (1k facts, batches of 256)",
                     f"{imp:.0f} facts/s ({imp / raw:.2f}x raw)"))

        # single remember latency
        lat = []
        for i in range(60):
            t0 = time.perf_counter()
            await mem.remember("writes", f"single fact number {i} about {base[i]}")
            lat.append((time.perf_counter() - t0) * 1000)
        rows.append(("remember p50 / p95 (60 writes)",
                     f"{pct(lat, .5):.1f} / {pct(lat, .95):.1f} ms"))

        for size in sizes:
            part = f"size-{size}"
            await mem.import_(part, [{"text": t} for t in base[:size]], batch_size=512)
            await store.maintain(part)
            await mem.recall(part, "warm up", 1024)
            lat = []
            for i in range(100):
                q = QUERIES[i % len(QUERIES)] + (f" #{i}" if i >= len(QUERIES) else "")
                t0 = time.perf_counter()
                await mem.recall(part, q, 1024)
                lat.append((time.perf_counter() - t0) * 1000)
            rows.append((f"recall p50 / p95 at {size} facts (1 KiB)",
                         f"{pct(lat, .5):.1f} / {pct(lat, .95):.1f} ms"))

        # forget-to-gone with the server's maintenance scheduler and default retention
        marker = "forget-marker-5c1e0b"
        await mem.remember("forget", f"secret {marker}")
        maint = Maintainer(store, delay_s=2.0)
        mem.observer = _Touch(maint)
        maint.start()
        t0 = time.perf_counter()
        await mem.forget("forget", 1)
        root = Path(tmp)
        while any(marker.encode() in p.read_bytes() for p in root.rglob("*") if p.is_file()):
            await asyncio.sleep(0.25)
            if time.perf_counter() - t0 > 120:
                break
        gone = time.perf_counter() - t0
        await maint.stop()
        rows.append(("forget → text in no file (retention 10 s, delay 2 s)", f"{gone:.1f} s"))

    print("| measure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print("\n(one run on this 2-core machine; percentiles over the calls listed)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    asyncio.run(main([int(s) for s in args.sizes.split(",")]))


class _Touch(QuietObserver):
    """Hands the memory's writes to a bare ``Maintainer`` (no follow-up purges)."""

    def __init__(self, maintainer: Maintainer) -> None:
        self.maintainer = maintainer

    def written(self, partition: str, dropped: bool) -> None:
        self.maintainer.touched(partition, dropped)
