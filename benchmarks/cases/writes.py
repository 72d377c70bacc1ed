"""Write path: single ``remember`` latency and bulk ``import`` vs raw ``model.encode``.

    .venv/bin/python -m benchmarks writes --facts 2000 --remembers 60

Real model, real LanceDB in a temp directory, one run. Raw throughput is the model's own batch
``encode`` (batch 64, normalised) of the same facts, measured in the same run just before the
import; the import embeds in batches of 256 and commits batch k while batch k+1 is embedded.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from benchmarks.factgen import facts
from benchmarks.harness import open_encoder, pct
from semmem.embedding.embedder import CachedEmbedder
from semmem.memory import Memory
from semmem.store import Store
from semmem.wiring import limit_blas_threads


async def main() -> None:
    limit_blas_threads()  # as the server does (semmem.wiring.open_memory)
    parser = argparse.ArgumentParser()
    parser.add_argument("--facts", type=int, default=2000)
    parser.add_argument("--remembers", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    model = open_encoder("torch")
    embedder = CachedEmbedder(model, size=0)
    all_facts = facts(args.facts * (args.rounds + 1) + args.remembers, seed=23)
    model.embed_batch(all_facts[:64])  # warm up
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(tmp, dim=model.dim, model_id=model.model_id)
        await store.open()
        mem = Memory(store, embedder)
        ratios = []
        for r in range(args.rounds):
            sample = all_facts[r * args.facts:(r + 1) * args.facts]
            t0 = time.perf_counter()
            model.embed_batch(sample)
            raw = len(sample) / (time.perf_counter() - t0)
            sample = all_facts[(r + 1) * args.facts:(r + 2) * args.facts]  # fresh texts
            t0 = time.perf_counter()
            report = await mem.import_(f"import-{r}", [{"text": t} for t in sample])
            imp = report.imported / (time.perf_counter() - t0)
            ratios.append(imp / raw)
            rows.append((f"round {r + 1}: raw encode / import ({args.facts:,} facts)",
                         f"{raw:.0f} / {imp:.0f} facts/s = **{imp / raw:.2f}×**"))
        big = all_facts[: args.facts]
        await mem.import_("writes", [{"text": t} for t in big])
        lat = []
        for i in range(args.remembers):
            text = all_facts[-(i + 1)] + " (single)"
            t0 = time.perf_counter()
            await mem.remember("writes", text)
            lat.append((time.perf_counter() - t0) * 1000)
        rows.append((f"remember into a {args.facts:,}-fact partition, p50/p95/p99 "
                     f"({args.remembers} writes)",
                     f"{pct(lat, .5):.1f} / {pct(lat, .95):.1f} / {pct(lat, .99):.1f} ms"))
        emb = []
        for i in range(args.remembers):
            t0 = time.perf_counter()
            model.embed_batch([all_facts[i] + " (embed only)"])
            emb.append((time.perf_counter() - t0) * 1000)
        rows.append(("of which the text's embedding, p50", f"{pct(emb, .5):.1f} ms"))
    print("| measure | value |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    asyncio.run(main())
