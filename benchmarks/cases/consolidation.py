"""What the write-time hints do on a real memory, and what owners' grouping costs.

    .venv/bin/python -m benchmarks consolidation --conversation ../shared/data/locomo-dev/26.json

1. One LoCoMo conversation's observations remembered one by one, in session order, through
   ``Memory.remember`` with the bundled model (a fresh store): how many ``similar`` entries a
   remember carries (mean, share with at least one, distribution), and a sample to read.
2. ``Memory.similar`` (the owners' groups) over ``--facts`` facts of real embeddings (the
   benchmark base set, through the store): wall time, median of ``--reps``.
3. What the hints add to a ``remember`` in such a partition: the hint step alone (the cached
   view's nearest facts, ``Memory._hints``) timed over 300 real query vectors, p50/p95, beside
   the whole in-process ``remember`` p50 (embedding included) of 100 new facts, and the part
   of the step that decides whether a fact stands out (``ranking.similar.cutoff``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

from benchmarks.data_sets import LOCOMO
from benchmarks.vectors import base_set
from semmem.embedding.choice import open_model
from semmem.embedding.embedder import Embedder
from semmem.embedding.files import default_model_dir
from semmem.evaluation.dataset import load_locomo
from semmem.memory import Memory
from semmem.ranking.similar import cutoff
from semmem.store import ItemRow, Mutation, PartitionSnapshot
from semmem.wiring import limit_blas_threads


async def hints_on(conversation: Path, sample: int, seed: int) -> None:
    """Load the conversation fact by fact and report the hints the remembers answered."""
    part = load_locomo(conversation)
    model = open_model(default_model_dir(), "auto")
    with tempfile.TemporaryDirectory() as tmp:
        memory = await Memory.open(str(Path(tmp) / "db"), model)
        answers = [(fact.text, await memory.remember("conv", fact.text)) for fact in part.facts]
        await memory.close()
    counts = [len(a.get("similar", [])) for _, a in answers]
    existing = sum(1 for _, a in answers if a.get("existing"))
    print(f"{conversation.name}: {len(answers)} remembers ({existing} exact duplicates), "
          f"similar entries per remember: mean {statistics.mean(counts):.2f}, "
          f"with at least one {100 * sum(c > 0 for c in counts) / len(counts):.1f} %")
    print("entries per remember:", dict(sorted(Counter(counts).items())))
    with_hints = [(t, a) for t, a in answers if a.get("similar")]
    for text, answer in random.Random(seed).sample(with_hints, min(sample, len(with_hints))):
        print(f"\n#{answer['n']} {text}")
        for hint in answer["similar"]:
            print(f"    ~ #{hint['n']} ({hint['score']:.2f}) {hint['text']}")


@contextlib.asynccontextmanager
async def seeded(model: Embedder, facts: int) -> AsyncIterator[Memory]:
    """A memory whose partition ``big`` holds ``facts`` facts of the base set, its snapshot
    read once (cached, as a server has it)."""
    texts, vectors, _ = base_set(model, facts)
    with tempfile.TemporaryDirectory() as tmp:
        memory = await Memory.open(str(Path(tmp) / "db"), model)
        rows = [ItemRow(i + 1, t, v, i, i, 1) for i, (t, v) in enumerate(zip(texts, vectors,
                                                                              strict=True))]
        await memory.store.write("big", lambda _view: Mutation(items=rows, hwm=len(rows)))
        await memory.recall("big", "warm the snapshot", 1024)
        try:
            yield memory
        finally:
            await memory.close()


async def grouping(facts: int, reps: int) -> None:
    """Time the owners' groups over ``facts`` facts of real embeddings."""
    async with seeded(open_model(default_model_dir(), "auto"), facts) as memory:
        times, found = [], []
        for _ in range(reps):
            started = time.perf_counter()
            found = await memory.similar("big")
            times.append(time.perf_counter() - started)
    sizes = Counter(len(g.members) for g in found)
    print(f"\nsimilar groups over {facts:,} facts: median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}, {reps} runs); {len(found)} groups, "
          f"sizes {dict(sorted(sizes.items()))}")


async def hint_cost(facts: int) -> None:
    """Time the hint step and a whole remember in a cached partition of ``facts`` facts."""
    model = open_model(default_model_dir(), "auto")
    async with seeded(model, facts) as memory:
        queries = model.embed_batch([f"Fresh fact number {i} about the weekend"
                                     for i in range(300)])
        steps, bars = [], []
        view = memory.store.cached_view("big")
        assert isinstance(view, PartitionSnapshot)
        for vector in queries:
            started = time.perf_counter()
            await memory._hints("big", vector)
            steps.append(1000 * (time.perf_counter() - started))
            row = view.vectors @ vector
            started = time.perf_counter()
            cutoff(row, memory.similar_threshold)
            bars.append(1000 * (time.perf_counter() - started))
        writes = []
        for i in range(100):
            started = time.perf_counter()
            await memory.remember("big", f"A newly learnt fact, number {i}, about cooking")
            writes.append(1000 * (time.perf_counter() - started))
    steps.sort()
    print(f"\nhint step at {facts:,} facts: p50 {statistics.median(steps):.2f} ms, "
          f"p95 {steps[int(0.95 * len(steps))]:.2f} ms (300 queries); whole remember p50 "
          f"{statistics.median(writes):.1f} ms (100 writes, embedding included); of the step, "
          f"the standout cutoff over the row: p50 {statistics.median(bars):.3f} ms")


def main() -> None:
    """Run both measurements."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversation", type=Path, default=None,
                        help="a LoCoMo conversation's file (else the first of $SEMMEM_LOCOMO)")
    parser.add_argument("--sample", type=int, default=15)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    limit_blas_threads()
    conversation = args.conversation or sorted(LOCOMO.path().glob("*.json"))[0]
    asyncio.run(hints_on(conversation, args.sample, args.seed))
    asyncio.run(grouping(args.facts, args.reps))
    asyncio.run(hint_cost(args.facts))


if __name__ == "__main__":
    main()
