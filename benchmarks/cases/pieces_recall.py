"""Ranking a partition of conversation pieces against one of facts (issue 47): recall p50.

    .venv/bin/python -m benchmarks pieces_recall [--items 50000] [--queries 200]

The same texts and vectors (random unit vectors, texts from the benchmark base set), once as
facts and once as pieces (sessions of 20 messages, alternating user and assistant), ranked and
packed in process by ``semmem.results.relevant`` at 2 KB: what the pieces' fields cost ranking
(the assistant term, the cues, a line's date and role). The set's derived structures are built
before timing, as a steady partition's are. Reports p50/p95 per kind and their ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.envelopes import NAMES, QUERIES
from benchmarks.factgen import facts as base_facts
from benchmarks.harness import pct
from semmem.items import Item
from semmem.ranking.ranker import Ranker
from semmem.results import relevant
from semmem.store.views import ItemSet

DIM = 384


def unit(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to norm 1."""
    out: np.ndarray = (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)
    return out


# Topics: items and queries near one of 500 directions, so a recall has candidates above the
# relevance floor (random vectors in 384 dimensions are all but orthogonal).
CENTRES = unit(np.random.default_rng(3).standard_normal((500, DIM)).astype(np.float32))


def item_sets(count: int, seed: int = 7) -> tuple[ItemSet, ItemSet]:
    """The same texts and vectors as facts and as pieces."""
    rng = np.random.default_rng(seed)
    vectors = unit(CENTRES[rng.integers(0, len(CENTRES), count)]
                   + 0.08 * rng.standard_normal((count, DIM)).astype(np.float32))
    base = base_facts(min(count, 10_000), seed)
    texts = [base[i % len(base)] for i in range(count)]
    facts, pieces = [], []
    for i, text in enumerate(texts):
        n, ts = i + 1, 1_684_000_000_000 + i * 60_000
        facts.append(Item(n, text, ts, ts, 1, n, "bench"))
        attrs = {"keyed": {"space": "session", "key": f"s{i // 20}"},
                 "piece": {"role": "user" if i % 2 == 0 else "assistant",
                           "at": "2023-05-20T10:00:00Z", "message": i % 20, "part": 0}}
        pieces.append(Item(n, text, ts, ts, 1, n, "bench", attrs))
    return ItemSet(facts, vectors), ItemSet(pieces, vectors.copy())


def measure(snap: ItemSet, queries: list[tuple[str, np.ndarray]]) -> list[float]:
    """Milliseconds per recall within 2 KB."""
    ranker = Ranker()
    relevant(ranker, snap, queries[0][1], queries[0][0], 2048, "")  # derived structures
    out = []
    for text, vec in queries:
        started = time.perf_counter()
        relevant(ranker, snap, vec, text, 2048, "")
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    facts, pieces = item_sets(args.items)
    rng = np.random.default_rng(11)
    pool = [q.format(n=n) for q in QUERIES for n in NAMES]
    queries = []
    for i in range(args.queries):
        vec = CENTRES[rng.integers(0, len(CENTRES))] + 0.08 * rng.standard_normal(DIM)
        queries.append((pool[i % len(pool)], unit(vec.astype(np.float32))))
    timings: dict[str, list[float]] = {"facts": [], "pieces": []}
    for _ in range(3):  # interleaved rounds: the machine's load falls on both alike
        timings["facts"] += measure(facts, queries)
        timings["pieces"] += measure(pieces, queries)
    for kind, ms in timings.items():
        print(f"{kind:7} {args.items} items: p50 {pct(ms, 0.5):.2f} ms, p95 {pct(ms, 0.95):.2f} ms")
    print(f"pieces / facts p50: {pct(timings['pieces'], 0.5) / pct(timings['facts'], 0.5):.2f}×")


if __name__ == "__main__":
    main()
