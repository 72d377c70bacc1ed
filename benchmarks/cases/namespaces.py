"""Listing namespaces and prefix searches as the namespaces ever created grow (issue 54, 2).

    .venv/bin/python -m benchmarks namespaces --namespaces 1000

In process, fake embedder, a temp LanceDB directory, the store's default cache (256
partitions): ``--namespaces`` users each put one item in ``("users", <id>)``; at each
checkpoint (100, 300, 1,000…) ``list_namespaces(prefix=("users",), limit=10)`` and
``search(("users",), limit=10)`` are timed (median of ``--runs``), as ``POST /store`` runs
them (``semmem.stored.batch.run``); then every namespace but ten is emptied (its item
deleted) and both are timed again.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from semmem.stored.batch import run
from semmem.stored.items import StoreItems
from semmem.stored.requests import parse_request


async def timed(items: StoreItems, body: Mapping[str, object], runs: int) -> float:
    """The median time of ``runs`` runs of the batch ``body``, in ms."""
    ops = parse_request(body)
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        await run(items, ops)
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took)


async def main(count: int, runs: int) -> None:
    checkpoints = sorted({c for c in (100, 300, 1000, 3000, 10000) if c < count} | {count})
    with tempfile.TemporaryDirectory() as root:
        embedder = HashingEmbedder()
        store = Store(str(Path(root) / "db"), dim=embedder.dim, model_id=embedder.model_id)
        await store.open()
        memory = Memory(store, embedder)
        items = StoreItems(memory)
        listing = {"ops": [{"op": "list", "conditions": [{"type": "prefix",
                                                          "path": ["users"]}], "limit": 10}]}
        search = {"ops": [{"op": "search", "namespace": ["users"], "limit": 10}]}
        made = 0
        print("namespaces  list_namespaces(prefix, limit=10) ms  search(prefix, limit=10) ms")
        for checkpoint in checkpoints:
            while made < checkpoint:
                await items.put(("users", f"u{made:05d}"), "profile", {"i": made}, [], None)
                made += 1
            print(f"{checkpoint:>10}  {await timed(items, listing, runs):>35.1f}  "
                  f"{await timed(items, search, runs):>26.1f}", flush=True)
        for i in range(10, made):  # all but ten emptied: what was created, not what lives
            await items.delete(("users", f"u{i:05d}"), "profile")
        print(f"{'10 of ' + str(made):>10}  {await timed(items, listing, runs):>35.1f}  "
              f"{await timed(items, search, runs):>26.1f}", flush=True)
        await memory.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.namespaces, args.runs))
