"""What the write fence and local durability cost: remember p50 on local disk with ``fsync``
on and off, and a write whose confirmation is stale (it lists the versions first).

    .venv/bin/python -m benchmarks fence --writes 300

The store's own path only (fake embedder at 384 dimensions: the model is beside the point),
real LanceDB in a temp directory on the disk under ``--dir``. The two stores are written in
turn, one remember each, so a drift of the machine's speed hits both alike; the figures are
medians of one run, and the ratio is of those medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2]


async def run(writes: int, root: Path) -> dict[str, float]:
    """Remember p50 (ms) with fsync, without, and after the confirmation went stale."""
    emb = HashingEmbedder(dim=384, model_id="hashing-384")
    memories = {}
    for name in ("durable", "plain"):
        store = Store(str(root / name), dim=384, model_id=emb.model_id)
        await store.open()
        store.writer.durable = name == "durable"
        memories[name] = Memory(store, emb)
    times: dict[str, list[float]] = {"durable": [], "plain": [], "stale": []}
    for i in range(writes):
        for name, memory in memories.items():
            started = time.perf_counter()
            await memory.remember("p", f"fact {i} about {name} and topic {i % 13}")
            times[name].append((time.perf_counter() - started) * 1000)
    durable = memories["durable"]
    for i in range(min(writes, 40)):  # a write after the confirmation aged past 1 s
        durable.store.snapshots.confirmed["p"] = (durable.store.snapshots.confirmed["p"][0],
                                                  time.monotonic() - 10)
        started = time.perf_counter()
        await durable.remember("p", f"a write after a pause {i}")
        times["stale"].append((time.perf_counter() - started) * 1000)
    for memory in memories.values():
        await memory.close()
    med = {k: round(_median(v), 2) for k, v in times.items()}
    return {"writes": writes, "remember_p50_ms_fsync": med["durable"],
            "remember_p50_ms_no_fsync": med["plain"],
            "fsync_ratio": round(med["durable"] / med["plain"], 3),
            "remember_p50_ms_stale_confirmation": med["stale"]}


def main() -> None:
    """Command line: print the figures as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--dir", type=Path, default=None, help="where the temp stores go")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="semmem-fence-", dir=args.dir) as tmp:
        print(json.dumps(asyncio.run(run(args.writes, Path(tmp))), indent=2))


if __name__ == "__main__":
    main()
