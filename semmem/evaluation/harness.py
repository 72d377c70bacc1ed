"""Running rankers over a labelled set: in memory (for sweeps) or through ``Memory.recall``.

Both paths build the same items (numbered in remember order, duplicates folded into the first
item with that text, as ``remember`` does) and the same vectors, and pack with the same code,
so they give identical results; ``run_memory`` is the real thing on a temporary LanceDB store.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from semmem.contract import MAX_SOURCES
from semmem.embedding.embedder import Embedder, embed_queries, queries_differ
from semmem.evaluation.dataset import LabelledSet, Query
from semmem.items import Item, Vectors, clean_text, dedupe_key
from semmem.memory import Memory
from semmem.ranking.packing import pack, render_line
from semmem.ranking.ranker import Ranker
from semmem.store.views import Head, PartitionSnapshot

BUDGETS = (512, 1024, 2048, 4096)
# Facts without a timestamp are spaced a minute apart from this instant, in remember order.
_BASE_TS = 1_704_067_200_000  # 2024-01-01T00:00:00Z


@dataclass(frozen=True)
class PreparedQuery:
    """A query with its vector and the numbers of the items relevant to it."""

    query: Query
    relevant: frozenset[int]
    vector: Vectors


@dataclass
class PreparedPartition:
    """A partition as the memory would hold it: numbered items, their vectors, the queries."""

    name: str
    items: list[Item]
    vectors: Vectors
    queries: list[PreparedQuery]  # labelled queries, then off-topic probes (nothing relevant)
    sizes: dict[int, int] = field(default_factory=dict)
    _snapshot: PartitionSnapshot | None = None

    def __post_init__(self) -> None:
        self.sizes = {it.n: len(render_line(it).encode("utf-8")) for it in self.items}

    def snapshot(self) -> PartitionSnapshot:
        """An in-memory snapshot of the partition (built once; rankers cache on it)."""
        if self._snapshot is None:
            model = self.items[0].model if self.items else None
            head = Head(self.name, 1, len(self.items), len(self.items), model)
            self._snapshot = PartitionSnapshot(list(self.items), self.vectors, head)
        return self._snapshot

    def records(self) -> list[dict[str, Any]]:
        """The items as import records (numbers and timestamps kept)."""
        return [{"n": it.n, "text": it.text, "ts": it.ts, "updated": it.updated}
                for it in self.items]


@dataclass(frozen=True)
class Outcome:
    """What one ranker did for one query: the ranked list and the lines packed per budget."""

    partition: str
    query: Query
    relevant: frozenset[int]
    ranked: tuple[int, ...]
    scores: tuple[float, ...]
    packed: Mapping[int, tuple[int, ...]]
    sizes: Mapping[int, int]
    # Per budget: the expected number of relevant facts among the packed lines, by the
    # ranker's calibrated relevance (in-memory runs only).
    expected: Mapping[int, float] = field(default_factory=dict)


def _embed_sides(embedder: Embedder, texts: list[str], asked: np.ndarray) -> np.ndarray:
    """Facts as stored and queries as searched with (one call each side), in ``texts``' order."""
    if not texts:
        return np.zeros((0, 1), np.float32)
    if not queries_differ(embedder):
        return embedder.embed_batch(texts)
    out = np.zeros((len(texts), embedder.dim), np.float32)
    for side in (False, True):
        rows = np.flatnonzero(asked == side)
        batch = [texts[i] for i in rows]
        if rows.size:
            out[rows] = embed_queries(embedder, batch) if side else embedder.embed_batch(batch)
    return out


def prepare(
    labelled: LabelledSet, embedder: Embedder, probes: Sequence[str] = ()
) -> list[PreparedPartition]:
    """Number, deduplicate and embed every partition's facts and queries.

    ``probes`` are inputs unrelated to any memory, added to every partition as queries with
    nothing relevant: whatever recall returns for them is noise.
    """
    extra = [Query(f"probe/{i}", text, frozenset(), "off-topic") for i, text in
             enumerate(probes, 1)]
    texts: list[str] = []
    asked: list[bool] = []  # a query (embedded as searched with) or a fact
    for part in labelled.partitions:
        texts.extend(clean_text(f.text) for f in part.facts)
        texts.extend(q.text for q in [*part.queries, *extra])
        asked.extend([False] * len(part.facts) + [True] * (len(part.queries) + len(extra)))
    vectors = _embed_sides(embedder, texts, np.array(asked, dtype=bool))
    at = 0
    out = []
    for part in labelled.partitions:
        items: list[Item] = []
        rows: list[int] = []
        by_key: dict[str, int] = {}
        fact_n: dict[str, int] = {}
        for fact in part.facts:
            text = clean_text(fact.text)
            key = dedupe_key(text)
            if key not in by_key:
                n = len(items) + 1
                ts = fact.ts if fact.ts is not None else _BASE_TS + 60_000 * n
                items.append(Item(n, text, ts, ts, 1, n, embedder.model_id))
                rows.append(at)
                by_key[key] = n
            fact_n[fact.id] = by_key[key]
            at += 1
        queries = []
        for q in [*part.queries, *extra]:
            queries.append(PreparedQuery(q, frozenset(fact_n[f] for f in q.relevant), vectors[at]))
            at += 1
        dim = vectors.shape[1]
        matrix = np.ascontiguousarray(vectors[rows] if rows else np.zeros((0, dim)), np.float32)
        out.append(PreparedPartition(part.name, items, matrix, queries))
    return out


def run_ranker(
    parts: Sequence[PreparedPartition], ranker: Ranker, budgets: Iterable[int] = BUDGETS
) -> list[Outcome]:
    """Rank and pack every query in memory, exactly as ``Memory.recall`` does."""
    budgets = tuple(budgets)
    out = []
    for part in parts:
        snap = part.snapshot()
        for pq in part.queries:
            ranked = [s for s in ranker.rank(snap, pq.vector, pq.query.text) if s.item.surfaced]
            scored = list(ranker.without_near_duplicates(snap, ranked))
            chance = dict(zip((s.item.n for s in scored), ranker.relevance(scored), strict=True))
            packed = {b: tuple(it.n for it in ranker.pack(
                snap, scored, b, MAX_SOURCES, distinct=True)[0].items) for b in budgets}
            out.append(Outcome(part.name, pq.query, pq.relevant,
                               tuple(s.item.n for s in scored),
                               tuple(s.score for s in scored), packed, part.sizes,
                               {b: sum(chance[n] for n in packed[b]) for b in budgets}))
    return out


def run_number_order(
    parts: Sequence[PreparedPartition], budgets: Iterable[int] = BUDGETS
) -> list[Outcome]:
    """The whole list in number order, as a memory without ranking would render it."""
    budgets = tuple(budgets)
    out = []
    for part in parts:
        packed = {b: tuple(it.n for it in pack(part.items, b, MAX_SOURCES).items)
                  for b in budgets}
        ranked = tuple(it.n for it in part.items)
        for pq in part.queries:
            out.append(Outcome(part.name, pq.query, pq.relevant, ranked,
                               tuple(0.0 for _ in ranked), packed, part.sizes))
    return out


async def run_memory_async(
    parts: Sequence[PreparedPartition], embedder: Embedder, rankers: Mapping[str, Ranker],
    budgets: Iterable[int] = BUDGETS, data_dir: Path | None = None,
) -> dict[str, list[Outcome]]:
    """Import every partition into a real LanceDB store and recall through ``Memory.recall``.

    The ranked list (for recall@k, MRR, nDCG) is the ranker's output on the store's snapshot,
    filtered and deduplicated as recall does; the packed lines are recall's own ``sources``.
    """
    budgets = tuple(budgets)
    with tempfile.TemporaryDirectory(prefix="semmem-eval-") as tmp:
        loader = await Memory.open(str(data_dir or Path(tmp)), embedder)
        try:
            for part in parts:
                await loader.import_(part.name, part.records())
            results: dict[str, list[Outcome]] = {}
            for name, ranker in rankers.items():
                memory = loader.with_ranker(ranker)
                results[name] = [o for part in parts
                                 for o in await _recall_partition(memory, part, budgets)]
            return results
        finally:
            await loader.close()


async def _recall_partition(
    memory: Memory, part: PreparedPartition, budgets: tuple[int, ...]
) -> list[Outcome]:
    snap = await memory.snapshot(part.name)
    if [it.n for it in snap.items] != [it.n for it in part.items]:
        raise RuntimeError(f"partition {part.name}: the store numbered the facts differently")
    out = []
    for pq in part.queries:
        qvec = embed_queries(memory.embedder, [pq.query.text])[0]
        ranker = memory.ranker
        ranked = [s for s in ranker.rank(snap, qvec, pq.query.text) if s.item.surfaced]
        scored = list(ranker.without_near_duplicates(snap, ranked))
        packed = {}
        for b in budgets:
            recall = await memory.recall(part.name, pq.query.text, b)
            packed[b] = tuple(int(src["id"]) for src in recall.sources)
        out.append(Outcome(part.name, pq.query, pq.relevant, tuple(s.item.n for s in scored),
                           tuple(s.score for s in scored), packed, part.sizes))
    return out


def run_memory(
    parts: Sequence[PreparedPartition], embedder: Embedder, rankers: Mapping[str, Ranker],
    budgets: Iterable[int] = BUDGETS, data_dir: Path | None = None,
) -> dict[str, list[Outcome]]:
    """Synchronous ``run_memory_async`` (for the CLI and notebooks)."""

    def go() -> dict[str, list[Outcome]]:
        return asyncio.run(run_memory_async(parts, embedder, rankers, budgets, data_dir))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return go()
    # Called from a running event loop (a notebook kernel): run the store on its own thread.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(go).result()


def same_outcomes(a: Sequence[Outcome], b: Sequence[Outcome]) -> bool:
    """Whether two runs ranked and packed every query identically."""
    return len(a) == len(b) and all(
        x.query.id == y.query.id and x.ranked == y.ranked and dict(x.packed) == dict(y.packed)
        for x, y in zip(a, b, strict=True)
    )
