"""How long the event loop stands still around an update: a text edit copies the partition's
vectors when its snapshot moves (older snapshots keep theirs).

    .venv/bin/python -m benchmarks update_stall --sizes 10000,40000 --updates 30

One partition of ``size`` facts (real embeddings of the benchmark base set, reused past 10k as
``python -m benchmarks recall`` fills them), held as a snapshot (a recall first), in this process as
``semmem serve`` opens it (no maintenance). For each of ``--updates`` text edits a heartbeat
task wakes every 0.5 ms from 10 ms before the edit until 30 ms after it: the longest gap
between its wake-ups is the longest the loop was held (the hint lookup, the decision, the
snapshot's step). Printed: that gap's p50 and max over the edits. ``--repo DIR`` imports
semmem from another checkout (the code before a change).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path


async def _beat(gaps: list[float], done: asyncio.Event) -> None:
    """Wake every 0.5 ms until ``done``, noting each gap between wake-ups (ms)."""
    last = time.perf_counter()
    while not done.is_set():
        await asyncio.sleep(0.0005)
        now = time.perf_counter()
        gaps.append((now - last) * 1000)
        last = now


async def stall(size: int, updates: int) -> tuple[float, float]:
    from benchmarks.envelopes import make_facts
    from benchmarks.harness import fill, open_encoder
    from benchmarks.vectors import base_set
    from semmem.settings import Settings
    from semmem.wiring import open_memory

    with tempfile.TemporaryDirectory(prefix="semmem-stall-") as tmp:
        memory = await open_memory(Settings(data=f"{tmp}/db", tokens="bench-token-0123456789"),
                                   maintain=False)
        texts, vectors, _ = base_set(open_encoder("torch"), 10_000)
        await fill(memory.store, "p", texts, vectors, size)
        await memory.recall("p", "what does Alice like", 1024)  # the snapshot is held
        facts = make_facts(updates, random.Random(size))
        worst = []
        for i, fact in enumerate(facts):
            gaps: list[float] = []
            done = asyncio.Event()
            task = asyncio.ensure_future(_beat(gaps, done))
            await asyncio.sleep(0.01)
            await memory.update("p", 10 + i, fact)
            await asyncio.sleep(0.03)  # the snapshot's step runs meanwhile
            done.set()
            await task
            worst.append(max(gaps))
        await memory.close()
    return statistics.median(worst), max(worst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,40000")
    parser.add_argument("--updates", type=int, default=30)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo.resolve()))
    for size in (int(s) for s in args.sizes.split(",")):
        p50, most = asyncio.run(stall(size, args.updates))
        print(f"{args.repo}: {size:,} facts: longest loop stall around an update "
              f"p50 {p50:.1f} ms, max {most:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
