"""Recall p50 with tracing off, against the code from before tracing existed, and with it on.

    git worktree add /tmp/semmem-base <commit before tracing>
    .venv/bin/python benchmarks/tracing_bench.py --base /tmp/semmem-base

Each measurement is a fresh process on one source tree: a temp store of ``--facts`` facts
(``benchmarks/factgen.py``, imported through the core), then ``--reps`` recalls through
``Memory.recall`` with the bundled model (the configured encoder), every query distinct (no
query cache), after 20 warm-up recalls. Modes, run in turn ``--rounds`` times so a noisy
moment hits all of them:

- **base**: the tree given with ``--base`` (no tracing code at all);
- **off**: this tree, no ``OTEL_*`` set (the default: every span is the shared null context);
- **on**: this tree with an OpenTelemetry tracer installed, spans kept in memory (the cost of
  tracing when it is configured, without an exporter's network).

Prints each run's p50/p95 and, per mode, the median of the rounds' p50s and its ratio to base.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_WORKER = r"""
import asyncio, json, sys, tempfile, time
tree, mode, facts, reps, model = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
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
        times = []
        for i in range(reps):
            t0 = time.perf_counter()
            await one(i)
            times.append((time.perf_counter() - t0) * 1000)
        await memory.close()
        times.sort()
        print(json.dumps({"p50": times[len(times) // 2], "p95": times[int(len(times) * 0.95)]}))

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


def main() -> None:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, required=True, help="source tree before tracing")
    parser.add_argument("--facts", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", type=Path, default=HERE / "models" / "all-MiniLM-L6-v2")
    args = parser.parse_args()
    trees = {"base": args.base.resolve(), "off": HERE, "on": HERE}
    p50s: dict[str, list[float]] = {mode: [] for mode in trees}
    for r in range(args.rounds):
        for mode, tree in trees.items():
            got = run(tree, mode, args)
            p50s[mode].append(got["p50"])
            print(f"round {r + 1} {mode:>4}: p50 {got['p50']:.2f} ms  p95 {got['p95']:.2f} ms",
                  flush=True)
    base = statistics.median(p50s["base"])
    for mode, values in p50s.items():
        mid = statistics.median(values)
        print(f"{mode:>4}: median p50 {mid:.2f} ms  ratio to base {mid / base:.3f}")


if __name__ == "__main__":
    main()
