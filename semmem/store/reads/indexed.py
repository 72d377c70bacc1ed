"""An indexed partition's reads, never loading it: nearest items (one query or many), the
newest, by number, what their expiry is computed from, and a view's live text bytes
(``IndexedReads``, this part of ``Store``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from semmem import tracing
from semmem.store.connection import Connection
from semmem.store.files import open_dataset
from semmem.store.handles import table_uri
from semmem.store.reads.keyed import items_numbered, numbers_after
from semmem.store.reads.reading import candidates
from semmem.store.reads.recency import recent_items
from semmem.store.reads.snapshots import Snapshots, live_text_bytes
from semmem.store.rows import ITEM_COLUMNS
from semmem.store.schema import LIVE_ITEMS
from semmem.store.upkeep.indexes import index_probes
from semmem.store.views import Candidates, IndexedView, PartitionSnapshot, ReadView


class IndexedReads:
    """The indexed reads of ``Store``: what they use of it, and the reads."""

    dim: int
    storage_options: dict[str, str]
    conn: Connection
    snapshots: Snapshots

    async def nearest(self, view: IndexedView, query: np.ndarray, k: int,
                      columns: list[str] = ITEM_COLUMNS, where: str | None = None
                      ) -> Candidates:
        """The ``k`` live items of an indexed partition nearest to ``query`` (cosine); rows
        not yet in the index are searched exactly. Only ``columns`` are read (each costs a
        read per candidate): ``rows.HINT_COLUMNS`` leaves the items' texts empty. ``where``:
        among the live items it selects only (a prefilter: a narrow one still fills ``k``)."""
        tbl = await self.conn.table(view.head.partition, create=False)
        if tbl is None:
            return Candidates([], np.zeros((0, self.dim), np.float32), view.head)
        q = (
            tbl.vector_search(np.asarray(query, np.float32).reshape(-1))
            .column("vector").distance_type("cosine").nprobes(index_probes(view.count))
            # _distance selected too: a search without it is deprecated (and logs so).
            .limit(k).select([*columns, "_distance"])
        )
        if where is not None:
            q = q.where(f"{LIVE_ITEMS} AND {where}")  # before the search (the default)
        with tracing.span("semmem.candidates") as span:
            data = await q.to_arrow()
            found = await asyncio.to_thread(candidates, view.head, data, self.dim)
            span.set("semmem.candidates.count", found.size)
            return found

    async def nearest_numbers(self, partition: str, query: np.ndarray, k: int) -> list[int]:
        """The numbers of the ``k`` live items nearest to ``query``, searched in the table (its
        vector index if it has one, else every vector) without loading the partition."""
        tbl = await self.conn.table(partition, create=False)
        if tbl is None:
            return []
        q = (
            tbl.vector_search(np.asarray(query, np.float32).reshape(-1))
            .column("vector").distance_type("cosine").where(LIVE_ITEMS)
            .limit(k).select(["n", "_distance"])
        )
        return [int(n) for n in (await q.to_arrow()).column("n").to_pylist()]

    async def neighbours(self, view: IndexedView, queries: np.ndarray, k: int
                         ) -> list[tuple[list[int], list[float]]]:
        """For each of ``queries`` (rows), the numbers and cosines of its ``k`` nearest live
        items in an indexed partition, best first: many searches in one index query."""
        tbl = await self.conn.table(view.head.partition, create=False)
        if tbl is None or not len(queries):
            return [([], []) for _ in queries]
        q = (
            tbl.vector_search([np.asarray(v, np.float32) for v in queries])
            .column("vector").distance_type("cosine").nprobes(index_probes(view.count))
            # refined on the full vectors: the cosines are exact (an IVF_SQ list's are not)
            .refine_factor(1).where(LIVE_ITEMS).limit(k).select(["n", "_distance"])
        )
        data = await q.to_arrow()
        out: list[tuple[list[int], list[float]]] = [([], []) for _ in queries]
        for qi, n, dist in zip(data.column("query_index").to_pylist(),
                               data.column("n").to_pylist(),
                               data.column("_distance").to_pylist(), strict=True):
            out[qi][0].append(int(n))
            out[qi][1].append(1.0 - float(dist))
        return out

    async def recent(self, view: IndexedView, k: int) -> Candidates:
        """The ``k`` most recently updated live items of an indexed partition."""
        uri = await self.conn.uri_of(view.head.partition)
        if uri is None:
            return Candidates([], np.zeros((0, self.dim), np.float32), view.head)

        def load() -> Candidates:
            ds = open_dataset(uri, self.storage_options, session=self.snapshots.session)
            return recent_items(ds, view.head, k, self.dim, view.count)

        return await asyncio.to_thread(load)

    async def numbered(self, view: IndexedView, *, numbers: list[int] | None = None,
                       after: int = 0, limit: int = 100) -> Candidates:
        """Live items of an indexed partition at the view's version, by number: ``numbers``,
        or else the first ``limit`` above ``after``; read by key, the partition never loaded."""
        uri = await self.conn.uri_of(view.head.partition)
        if uri is None:
            return Candidates([], np.zeros((0, self.dim), np.float32), view.head)

        def load() -> Candidates:
            ds = open_dataset(uri, self.storage_options, view.head.version)
            wanted = numbers if numbers is not None else numbers_after(ds, after, limit)
            return items_numbered(ds, view.head, wanted, self.dim)

        return await asyncio.to_thread(load)

    async def lifetimes(self, view: IndexedView) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """Of an indexed partition's live items at ``view``'s version: numbers, last writes,
        and record fields (JSON or ``None``): what their expiry is computed from."""
        uri = await self.conn.uri_of(view.head.partition)
        if uri is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), []

        def load() -> tuple[np.ndarray, np.ndarray, list[Any]]:
            ds = open_dataset(uri, self.storage_options, view.version)
            cols = ds.to_table(columns=["n", "updated", "attrs"], filter=LIVE_ITEMS)
            return (cols.column("n").to_numpy(), cols.column("updated").to_numpy(),
                    cols.column("attrs").to_pylist())

        return await asyncio.to_thread(load)

    async def text_bytes(self, view: ReadView) -> int:
        """UTF-8 bytes of the live texts of ``view``'s partition at its version (what a byte
        quota counts): summed from a snapshot, read from the table's text column past the
        index threshold."""
        if isinstance(view, PartitionSnapshot):
            return view.text_bytes
        tbl = await self.conn.table(view.partition, create=False)
        if tbl is None:
            return 0
        uri = await table_uri(tbl)
        return await asyncio.to_thread(
            lambda: live_text_bytes(open_dataset(uri, self.storage_options, view.version)))
