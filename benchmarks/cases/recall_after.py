"""The recall case's figures around writes: a remember's steps, the recall right after this
process's write, and the recall right after another replica's write (a second store on the
same directory, its own connection and caches: this process meets a version it did not
write)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import PARTITION, Steps, pct, queries
from semmem import tracing
from semmem.memory import Memory
from semmem.store import Store

BUDGET = 1024
Breakdown = Callable[..., Awaitable[dict[str, float]]]


async def after_writes(memory: Memory, embedder: Any, path: Path, reps: int,
                       threshold: int, breakdown: Breakdown) -> dict[str, Any]:
    """The remember p50 and its steps; the recall p50 and breakdown right after a write of
    this process and of another replica, and their ratios to ``core`` (set by the caller)."""
    out: dict[str, Any] = {}
    writes, after = [], []
    pairs = max(20, reps // 2) if reps >= 20 else reps
    steps = Steps()
    tracing.install(steps)
    try:
        for i, q in enumerate(queries(pairs, offset=5 * reps)):
            steps.on = True
            t0 = time.perf_counter()
            await memory.remember(PARTITION, f"new fact {i}: {q}")
            writes.append((time.perf_counter() - t0) * 1000)
            steps.on = False
            t0 = time.perf_counter()  # the next turn's recall: a new table version
            await memory.recall(PARTITION, f"{q} again", BUDGET)
            after.append((time.perf_counter() - t0) * 1000)
    finally:
        tracing.install(None)
    out["remember_breakdown"] = {k: pct(v, 0.5) for k, v in steps.ms.items()}
    out["remember_p50"] = pct(writes, 0.5)
    out["recall_after_write_p50"] = pct(after, 0.5)
    later = queries(pairs, offset=6 * reps)

    async def write(i: int) -> None:
        await memory.remember(PARTITION, f"another fact {i}: {later[i]}")

    out["after_write_breakdown"] = await breakdown(
        memory, [f"{q} once more" for q in later], before=write)
    other = Store(str(path), dim=memory.store.dim, model_id=memory.store.model_id,
                  index_threshold=threshold)
    await other.open()
    replica = Memory(other, embedder, model_executor=memory.model_executor)
    theirs = []
    for i, q in enumerate(queries(pairs, offset=7 * reps)):
        done = await replica.remember(PARTITION, f"a replica's fact {i}: {q}")
        t0 = time.perf_counter()
        await memory.recall(PARTITION, f"{q} seen", BUDGET)
        theirs.append((time.perf_counter() - t0) * 1000)
        if (await memory.store.read_view(PARTITION)).hwm != done["n"]:
            raise SystemExit("the recall did not see the other replica's write")
    more = queries(pairs, offset=8 * reps)

    async def replica_write(i: int) -> None:
        await replica.remember(PARTITION, f"one more replica fact {i}: {more[i]}")

    out["after_other_breakdown"] = await breakdown(
        memory, [f"{q} seen again" for q in more], before=replica_write)
    await other.close()
    out["recall_after_other_p50"] = pct(theirs, 0.5)
    return out
