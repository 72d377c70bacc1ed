"""What reading through the vector index costs in recall quality, on a labelled set.

    .venv/bin/python -m benchmarks indexed_quality --dataset LOCOMO_DIR  # or $SEMMEM_LOCOMO

Every partition of the set goes into two stores through the store layer (the set's own cached
real embeddings): one read in memory (the default below the index threshold), one forced past
the threshold (``index_threshold=0``, index built), where recall ranks the nearest items
instead of the whole partition (as many as the budget can use, up to ``--candidates``:
``memory.recall_candidates``). Same queries, same ranking, same budgets; prints
gold recall per budget for both and how often the packed lines are identical.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from benchmarks.data_sets import LOCOMO
from benchmarks.harness import mutation
from semmem.evaluation import Evaluation
from semmem.evaluation.harness import BUDGETS, Outcome
from semmem.evaluation.metrics import summarise
from semmem.memory import Memory
from semmem.store import ItemRow, Store
from semmem.wiring import limit_blas_threads


async def outcomes(ev: Evaluation, root: Path, indexed: bool, candidates: int
                   ) -> list[Outcome]:
    """Recall every labelled query through a store read in memory or through the index."""
    store = Store(str(root), dim=ev.embedder.dim, model_id=ev.embedder.model_id,
                  index_threshold=0 if indexed else 10**9)
    await store.open()
    memory = Memory(store, ev.embedder, index_candidates=candidates)
    out = []
    for part in ev.parts:
        rows = [ItemRow(it.n, it.text, part.vectors[i], it.ts, it.updated, 1)
                for i, it in enumerate(part.items)]
        await store.write(part.name, mutation(rows, max(x.n for x in rows)))
        if indexed:
            await store.build_index(part.name)
        for pq in part.queries:
            packed = {}
            for budget in ev.budgets:
                recall = await memory.recall(part.name, pq.query.text, budget)
                packed[budget] = tuple(int(s["id"]) for s in recall.sources)
            biggest = packed[max(ev.budgets)]
            out.append(Outcome(part.name, pq.query, pq.relevant, biggest,
                               tuple(0.0 for _ in biggest), packed, part.sizes))
    await store.close()
    return out


async def main() -> None:
    limit_blas_threads()  # as the server does (semmem.wiring.open_memory)
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=None)
    parser.add_argument("--candidates", type=int, default=100)
    args = parser.parse_args()
    ev = Evaluation.load(LOCOMO.path(args.dataset))
    with tempfile.TemporaryDirectory() as tmp:
        memory_side = await outcomes(ev, Path(tmp) / "memory", False, args.candidates)
        index_side = await outcomes(ev, Path(tmp) / "index", True, args.candidates)
    budgets = tuple(b for b in BUDGETS if b in ev.budgets)
    a, b = summarise(memory_side, budgets), summarise(index_side, budgets)
    print("| read path | " + " | ".join(f"gold recall @ {x} B" for x in budgets) + " |")
    print("| --- |" + " --- |" * len(budgets))
    for name, s in (("in memory (whole partition ranked)", a),
                    (f"vector index (up to {args.candidates} candidates ranked, "
                     "by budget: `recall_candidates`)", b)):
        print(f"| {name} | " + " | ".join(f"{100 * s.gold_recall(x):.1f} %" for x in budgets)
              + " |")
    same = {x: sum(m.packed[x] == i.packed[x] for m, i in zip(memory_side, index_side,
                                                             strict=True)) for x in budgets}
    print("\nidentical packed lines: " + ", ".join(
        f"{x} B {100 * same[x] / len(memory_side):.0f} %" for x in budgets)
        + f" of {len(memory_side)} queries; partitions of "
        f"{min(len(p.items) for p in ev.parts)}–{max(len(p.items) for p in ev.parts)} facts")


if __name__ == "__main__":
    asyncio.run(main())
