"""Recall p50 with tracing off, against the code from before tracing existed, and with it on.

    git worktree add /tmp/semmem-base <commit before tracing>
    .venv/bin/python -m benchmarks tracing_off --base /tmp/semmem-base

Each measurement is a fresh process on one source tree: a temp store of ``--facts`` facts
(``benchmarks/factgen.py``, imported through the core), then ``--reps`` recalls through
``Memory.recall`` with the bundled model (the configured encoder), every query distinct (no
query cache), after 20 warm-up recalls. Modes, run in turn ``--rounds`` times so a noisy
moment hits all of them:

- **base**: the tree given with ``--base`` (no tracing code at all);
- **off**: this tree, no ``OTEL_*`` set (the default: every span is the shared null context);
- **on**: this tree with an OpenTelemetry tracer installed, spans kept in memory (the cost of
  tracing when it is configured, without an exporter's network).

Modes take turns going first. Prints each run's p50/p95 and the p50 of its quietest block of
25 recalls (on a shared machine, the block least disturbed by other work is the best view of
the code's own cost),
per mode the medians over the rounds with their ratios to base, and what one null span (a
step's ``with tracing.span`` with tracing off) costs, measured directly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]

_WORKER = r"""
import asyncio, json, sys, tempfile, time
tree, mode, model = sys.argv[1], sys.argv[2], sys.argv[5]
facts, reps = int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, tree)
sys.path.insert(1, sys.argv[6])  # benchmarks/ of this tree, for factgen
from factgen import facts as make_facts
from semmem.settings import Settings
from semmem.wiring import open_memory
if mode == "on":
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from semmem import tracing
    from semmem.serving.otel import OtelTracer
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    tracing.install(OtelTracer(provider))

async def main():
    with tempfile.TemporaryDirectory() as data:
        memory = await open_memory(Settings(data=data, model=model))
        await memory.import_("bench", [{"text": t} for t in make_facts(facts)])
        async def one(i):
            if mode == "on":
                with tracing.span("bench.request", None, server=True):
                    await memory.recall("bench", f"what does person {i} like to eat?", 1024)
            else:
                await memory.recall("bench", f"what does person {i} like to eat?", 1024)
        for i in range(20):
            await one(-i - 1)
        times, blocks = [], []
        for block in range(0, reps, 25):
            got = []
            for i in range(block, min(block + 25, reps)):
                t0 = time.perf_counter()
                await one(i)
                got.append((time.perf_counter() - t0) * 1000)
            times += got
            blocks.append(sorted(got)[len(got) // 2])
        await memory.close()
        times.sort()
        print(json.dumps({"p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95)],
                          "best_block_p50": min(blocks)}))

asyncio.run(main())
"""


def run(tree: Path, mode: str, args: argparse.Namespace) -> dict[str, float]:
    """One measurement in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, str(tree), mode, str(args.facts), str(args.reps),
         str(args.model), str(HERE / "benchmarks")],
        capture_output=True, text=True, check=True, cwd=tree,
        env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def null_span_ns(calls: int = 1_000_000) -> float:
    """What one ``with tracing.span(...)`` costs with no tracer installed."""
    sys.path.insert(0, str(HERE))
    from semmem import tracing

    assert not tracing.enabled()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            with tracing.span("semmem.rank") as span:
                span.set("semmem.rank.candidates", 1)
        best = min(best, (time.perf_counter_ns() - t0) / calls)
    return best


def main() -> None:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, required=True, help="source tree before tracing")
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", type=Path, default=HERE / "models" / "all-MiniLM-L6-v2")
    args = parser.parse_args()
    trees = {"base": args.base.resolve(), "off": HERE, "on": HERE}
    p50s: dict[str, list[float]] = {mode: [] for mode in trees}
    best: dict[str, list[float]] = {mode: [] for mode in trees}
    modes = list(trees)
    for r in range(args.rounds):
        for mode in modes[r % 3:] + modes[:r % 3]:  # each mode first in turn
            got = run(trees[mode], mode, args)
            p50s[mode].append(got["p50"])
            best[mode].append(got["best_block_p50"])
            print(f"round {r + 1} {mode:>4}: p50 {got['p50']:.2f} ms  p95 {got['p95']:.2f} ms"
                  f"  quietest block of 25: p50 {got['best_block_p50']:.2f} ms", flush=True)
    print(f"a null span (tracing off): {null_span_ns():.0f} ns per step; a recall passes "
          "6 steps (embed, view read, rank, pack, and the two wrappers)")
    base, base_best = statistics.median(p50s["base"]), statistics.median(best["base"])
    for mode in trees:
        mid, quiet = statistics.median(p50s[mode]), statistics.median(best[mode])
        print(f"{mode:>4}: median p50 {mid:.2f} ms (x{mid / base:.3f} of base); median of the "
              f"quietest blocks {quiet:.2f} ms (x{quiet / base_best:.3f})")


if __name__ == "__main__":
    main()
