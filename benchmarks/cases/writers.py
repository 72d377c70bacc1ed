"""Where a remember's time goes under 1 and 8 writers into one partition, step by step.

    .venv/bin/python -m benchmarks writers --facts 10000 --seconds 10

One 10k partition (real embeddings of the benchmark base set, one maintenance pass, as
``recall --served`` seeds it), opened in this process the way ``semmem serve`` opens it
(``wiring.open_memory`` with the shipped settings: ONNX encoder, fsync on a local disk, the
write fence, maintenance scheduled), then in one run:

- **1 writer**: sequential ``Memory.remember`` calls;
- **8 writers**: eight tasks calling ``Memory.remember`` for ``--seconds``;

each with remembers/s, the remember's p50/p95, the commits made (group size) and, per step
(the spans: embed, hints, write view, commit and the commit's own steps: files, fsync before,
gate, the engine's commit, fsync after), its p50 and the milliseconds it costs per acknowledged
remember (the sum of the step's time over the writes acknowledged); then 40 **turns** of 4
remembers and 1 update sent at once against one remember, and interleaved with them the model
alone on one text, on five in one call and on one then four: what a turn's texts cost the model
beyond one remember's, the floor of the turn's ratio. No HTTP: the store's path and the model
only (``recall --served`` measures the same load over HTTP).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.envelopes import PARTITION, make_facts
from benchmarks.harness import Steps, pct
from benchmarks.harness import seed_partition as seed
from semmem import tracing
from semmem.settings import Settings
from semmem.wiring import open_memory

STEPS = ("semmem.embed", "semmem.hints", "semmem.write_view", "semmem.commit",
         "semmem.commit.files", "semmem.fsync.files", "semmem.commit.gate",
         "semmem.commit.engine", "semmem.fsync.manifest")


async def load(memory: Any, facts: list[str], writers: int, seconds: float,
               steps: Steps) -> dict[str, Any]:
    """``writers`` tasks remembering for ``seconds``: the figures and the step breakdown."""
    latencies: list[float] = []
    groups = memory.store.writer.groups
    stop = time.perf_counter() + seconds
    source = iter(facts)

    async def writer() -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await memory.remember(PARTITION, next(source))
            latencies.append((time.perf_counter() - t0) * 1000)

    steps.ms.clear()
    steps.on = True
    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    wall = time.perf_counter() - started
    steps.on = False
    done = len(latencies)
    commits = memory.store.writer.groups - groups
    return {
        "writers": writers, "per_s": done / wall, "p50": pct(latencies, 0.5),
        "p95": pct(latencies, 0.95), "commits": commits, "group": done / max(commits, 1),
        "steps": {k: (pct(v, 0.5), sum(v) / max(done, 1), len(v))
                  for k, v in steps.ms.items()},
    }


async def model_alone(memory: Any, calls: list[list[str]]) -> float:
    """Milliseconds the model thread takes for ``calls`` one after the other (no queue, no
    loop between them: the model's own floor)."""
    model = memory.model

    def run() -> float:
        t0 = time.perf_counter()
        for texts in calls:
            model.embedder.embed_batch(texts)
        return (time.perf_counter() - t0) * 1000

    took: float = await asyncio.get_running_loop().run_in_executor(model.executor, run)
    return took


async def turns(memory: Any, facts: list[str], count: int, steps: Steps) -> dict[str, Any]:
    """``count`` turns of 4 remembers and 1 update (of the previous turn's first fact) sent
    at once, against as many single remembers in between: the turn's ratio and breakdown,
    and, interleaved with them, the model alone on the same kind of texts: one text, the
    turn's five in one call, and one then four (as a turn reaches an idle model)."""
    single: list[float] = []
    turn: list[float] = []
    alone: dict[str, list[float]] = {"1": [], "5": [], "1+4": []}
    steps.ms.clear()
    n = int((await memory.remember(PARTITION, facts.pop()))["n"])
    for _ in range(count):
        t0 = time.perf_counter()
        n = int((await memory.remember(PARTITION, facts.pop()))["n"])
        single.append((time.perf_counter() - t0) * 1000)
        steps.on = True
        t0 = time.perf_counter()
        out = await asyncio.gather(*(memory.remember(PARTITION, facts.pop()) for _ in range(4)),
                                   memory.update(PARTITION, n, facts.pop()))
        turn.append((time.perf_counter() - t0) * 1000)
        steps.on = False
        n = int(out[0]["n"])
        texts = [facts.pop() for _ in range(11)]  # never seen: no query cache
        alone["1"].append(await model_alone(memory, [texts[:1]]))
        alone["5"].append(await model_alone(memory, [texts[1:6]]))
        alone["1+4"].append(await model_alone(memory, [texts[6:7], texts[7:11]]))
    one, five = pct(single, 0.5), pct(turn, 0.5)
    print(f"turn of 4 remembers + 1 update: p50 {five:.1f} ms against one remember "
          f"{one:.1f} ms: {five / one:.2f}×")
    m1, m5, m14 = (pct(alone[k], 0.5) for k in ("1", "5", "1+4"))
    print(f"    the model alone, p50: one text {m1:.2f} ms, five in one call {m5:.2f} ms, one "
          f"then four {m14:.2f} ms: a turn's texts cost the model {m5 - m1:.2f} to "
          f"{m14 - m1:.2f} ms more than one remember's, so a turn is at least "
          f"{(one + m5 - m1) / one:.2f}× to {(one + m14 - m1) / one:.2f}× one remember")
    for name in [s for s in STEPS if s in steps.ms]:
        v = steps.ms[name]
        print(f"    {name:30s} p50 {pct(v, 0.5):6.2f} ms  {sum(v) / count:6.2f} ms per turn"
              f"  ({len(v)})")
    return {"turn": five, "one": one, "model_one": m1, "model_five": m5, "model_one_four": m14}


def report(r: dict[str, Any]) -> None:
    """Print one load's figures."""
    print(f"{r['writers']} writer(s): {r['per_s']:.1f} remembers/s, p50 {r['p50']:.1f} ms, "
          f"p95 {r['p95']:.1f} ms, {r['commits']} commits ({r['group']:.2f} writes each)")
    order = [s for s in STEPS if s in r["steps"]] + sorted(set(r["steps"]) - set(STEPS))
    for name in order:
        p50, per_write, count = r["steps"][name]
        print(f"    {name:30s} p50 {p50:6.2f} ms  {per_write:6.2f} ms per remember  ({count})")


async def run(data: Path, facts: list[str], seconds: float, writers: list[int]) -> None:
    settings = Settings(data=str(data), tokens="bench-token-0123456789")
    memory = await open_memory(settings, maintain=True)
    await memory.start()
    steps = Steps()
    tracing.install(steps)
    try:
        for _ in range(20):  # the model, the partition's snapshot, the tail
            await memory.remember(PARTITION, facts.pop())
        for n in writers:
            report(await load(memory, facts, n, seconds, steps))
        await turns(memory, facts, 40, steps)
    finally:
        tracing.install(None)
        await memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--writers", default="1,8")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the store is made (default: a temp folder)")
    args = parser.parse_args()
    facts = make_facts(20_000, random.Random(args.seed))
    print(f"{args.facts} facts, one partition, real model, {os.cpu_count()} CPUs, in process")
    with tempfile.TemporaryDirectory(prefix="semmem-writers-", dir=args.dir) as tmp:
        data = Path(tmp) / "db"
        asyncio.run(seed(data, args.facts))
        asyncio.run(run(data, facts, args.seconds,
                        [int(w) for w in args.writers.split(",")]))


if __name__ == "__main__":
    main()
