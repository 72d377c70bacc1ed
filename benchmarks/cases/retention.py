"""What retention costs a read, and how fast the sweep forgets.

    .venv/bin/python -m benchmarks retention --size 10000 --recalls 300

One temp LanceDB store, the fake embedder (the model is beside the point: the query embedding
is the same with or without retention), one partition of ``--size`` facts imported in
batches. Measured in one run, interleaved round by round so machine noise hits each case alike:

- **recall p50** (a real query, 1 KiB budget) with no policy, with a 90-day policy under which
  nothing is expired (the cost of checking: the per-version expiry array, the cached filter),
  and with 1 % of the facts expired (their own ``expiresAt`` in the past: a filtered copy of the
  snapshot, built once and kept until the next expiry);
- **first recall after a write** with 1 % expired (the expiry array and filtered copy rebuilt
  for the new version);
- **sweep**: seconds to forget the expired facts (commits of up to 256) and facts per second,
  then the first recall after a write again (nothing expired: no filtered copy).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import iso, now_ms
from semmem.lifecycle.retention import Retention
from semmem.lifecycle.sweep import sweep
from semmem.memory import Memory
from semmem.store import Store

QUERY = "what does fact about thing42 say"


async def _recall_ms(m: Memory, partition: str) -> float:
    started = time.perf_counter()
    await m.recall(partition, QUERY, 1024)
    return (time.perf_counter() - started) * 1000


async def main(size: int, recalls: int) -> None:
    emb = HashingEmbedder()
    with tempfile.TemporaryDirectory() as root:
        store = Store(root, dim=emb.dim, model_id=emb.model_id)
        await store.open()
        plain = Memory(store, emb, retention=Retention(store, None))
        aged = Memory(store, emb, retention=Retention(store, 90 * 86_400_000))
        expired_n = size // 100
        past = iso(now_ms() - 60_000)
        for name, hide in (("plain", 0), ("expiring", expired_n)):
            await plain.import_(name, [
                {"text": f"fact {i} about thing{i} and item{i % 97}",
                 **({"expiresAt": past} if i < hide else {})} for i in range(size)])
        cases = {"no policy": (plain, "plain"), "90d, none expired": (aged, "plain"),
                 "1% expired": (plain, "expiring")}
        times: dict[str, list[float]] = {k: [] for k in cases}
        for m, p in cases.values():  # warm: snapshots loaded, derived structures built
            for _ in range(5):
                await _recall_ms(m, p)
        for _ in range(recalls):
            for label, (m, p) in cases.items():
                times[label].append(await _recall_ms(m, p))
        base = statistics.median(times["no policy"])
        print(f"size {size}, {recalls} recalls per case (interleaved)")
        for label, values in times.items():
            med = statistics.median(values)
            print(f"  recall p50 {label:>18}: {med:7.2f} ms  ({med / base:4.2f}x no policy)")
        after = []
        for i in range(20):
            await plain.remember("expiring", f"a new fact number {i} after the import")
            after.append(await _recall_ms(plain, "expiring"))
        print(f"  first recall after a write, 1% expired: p50 {statistics.median(after):.2f} ms")
        started = time.perf_counter()
        done = await sweep(plain, ["expiring"])
        took = time.perf_counter() - started
        gone = len(done.get("expiring", []))
        print(f"  sweep: {gone} expired facts forgotten in {took:.2f} s "
              f"({gone / took:.0f} facts/s)")
        again = []
        for i in range(20):
            await plain.remember("expiring", f"a later fact number {i} after the sweep")
            again.append(await _recall_ms(plain, "expiring"))
        print(f"  first recall after a write, once swept: p50 {statistics.median(again):.2f} ms")
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.size, args.recalls))
