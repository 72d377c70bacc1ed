"""Keeping each partition's snapshot current without rebuilding it.

A snapshot is built once from the whole table; after that it moves forward: this process's own
commits are applied to it directly (their rows are known), and versions made elsewhere (another
process or replica, compaction, cleanup) are read as a delta — the rows whose write sequence is
newer than the snapshot's — or, when nothing was written, taken as they are. Writes decide on
a view cut from the current snapshot, so a write reads no table rows at all while the
partition's snapshot is cached.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from semmem.store.cache import ViewCache
from semmem.store.evolve import evolve
from semmem.store.files import open_dataset
from semmem.store.reading import decode
from semmem.store.rows import KIND_OP, Lookup, table_name
from semmem.store.schema import LIVE_ITEMS, Batch
from semmem.store.views import Head, PartitionSnapshot, WriteView

log = logging.getLogger("semmem.store")

# A delta of more rows than this (or than a quarter of the items) is read as a rebuild.
MAX_DELTA_ROWS = 4096


class Snapshots:
    """The read views of a store's partitions, and the dataset handles writes commit against."""

    def __init__(self, dim: int, model_id: str, storage_options: dict[str, str],
                 max_views: int, max_items: int, max_rows: int) -> None:
        self.dim = dim
        # Past this many rows a partition is read through its index, not held as a snapshot.
        self.max_rows = max_rows
        self.model_id = model_id
        self.storage_options = storage_options
        self.cache = ViewCache(max_views, max_items)
        self._datasets: OrderedDict[str, Any] = OrderedDict()
        self.max_datasets = max_views
        # Per table: the version this process just committed and whose snapshot is being
        # brought forward, with the event set when it is (a read of it waits, not rereads).
        self._following: dict[str, tuple[int, asyncio.AbstractEventLoop, asyncio.Event]] = {}
        self.rebuilds = 0  # full reads of a partition (for tests and benchmarks)
        self.forwards = 0  # snapshots brought forward by a delta read

    def drop(self, name: str) -> None:
        """Forget what is held for table ``name``."""
        self.cache.drop(name)
        self._datasets.pop(name, None)
        self._following.pop(name, None)  # its step puts nothing back; its readers read afresh

    def clear(self) -> None:
        """Forget everything."""
        self.cache.clear()
        self._datasets.clear()
        self._following.clear()

    async def at(self, partition: str, tbl: Any, version: int) -> PartitionSnapshot:
        """The snapshot of ``partition`` at ``version``: cached, brought forward, or built."""
        name = table_name(partition)
        cached = self.cache.get(name, version)
        if isinstance(cached, PartitionSnapshot):
            return cached
        following = self._following.get(name)
        if following is not None and following[0] == version \
                and following[1] is asyncio.get_running_loop():
            await following[2].wait()
            cached = self.cache.get(name, version)
            if isinstance(cached, PartitionSnapshot):
                return cached
        older = self.cache.latest(name)
        if isinstance(older, PartitionSnapshot) and older.version < version:
            uri = await tbl.uri()
            forward = await asyncio.to_thread(self._forward, uri, older, version)
            if forward is not None:
                self.forwards += 1
                self.cache.put(name, forward)
                return forward
        data = await tbl.to_arrow()
        d = await asyncio.to_thread(decode, partition, version, data, self.dim)
        snap = PartitionSnapshot(d.items, d.vectors, d.head, d.tombstones, d.ops)
        self.rebuilds += 1
        self.cache.put(name, snap)
        return snap

    def _forward(self, uri: str, snap: PartitionSnapshot, version: int
                 ) -> PartitionSnapshot | None:
        # Its own handle: the write path's handle moves forward as it commits.
        ds = open_dataset(uri, self.storage_options, version)
        rows = ds.to_table(filter=f"seq > {int(snap.seq)}")
        if rows.num_rows > min(MAX_DELTA_ROWS, max(64, snap.count // 4)):
            return None
        if rows.num_rows == 0:  # no write since (compaction, cleanup, an index): same content
            head = Head(snap.partition, version, snap.hwm, snap.seq, snap.model)
            new = PartitionSnapshot(snap.items, snap.vectors, head, snap.tombstones, snap.ops,
                                    by_n=snap.by_n, by_key=snap.by_key, derived=snap.derived)
        else:
            d = decode(snap.partition, version, rows, self.dim)
            new = evolve(snap, d.head, d.items, d.vectors, d.tombstones, d.ops)
        total = ds.count_rows()
        if total == 1 + new.count + len(new.tombstones) + len(new.ops):
            return new
        # Fewer rows: maintenance pruned expired records (a delete that writes no sequence).
        ops = decode(snap.partition, version, ds.to_table(filter=f"kind = {KIND_OP}"),
                     self.dim).ops
        if total != 1 + new.count + len(new.tombstones) + len(ops):
            return None
        return PartitionSnapshot(new.items, new.vectors, new.head, new.tombstones, ops,
                                 by_n=new.by_n, by_key=new.by_key, derived=new.derived)

    def dataset(self, name: str, uri: str, version: int) -> Any:
        """The table's dataset at ``version`` (the handle of the last write is reused)."""
        ds = self._datasets.get(name)
        if ds is None or ds.version != version:
            ds = open_dataset(uri, self.storage_options, version)
            self._datasets[name] = ds
        self._datasets.move_to_end(name)
        while len(self._datasets) > self.max_datasets:
            self._datasets.popitem(last=False)
        return ds

    async def write_view(self, partition: str, tbl: Any, version: int,
                         lookup: Lookup) -> tuple[Any, WriteView]:
        """The view a write decides on at ``version``, and the dataset to commit against: cut
        from the snapshot when one is cached, else read from the table (the rows looked up)."""
        name = table_name(partition)
        uri = await tbl.uri()
        if isinstance(self.cache.latest(name), PartitionSnapshot):
            snap = await self.at(partition, tbl, version)
            ds = self._datasets.get(name)
            if ds is None or ds.version != version:  # opening reads a manifest: off the loop
                ds = await asyncio.to_thread(self.dataset, name, uri, version)
            else:
                self._datasets.move_to_end(name)
            return ds, cut(snap, lookup)
        return await asyncio.to_thread(self._read_write_view, name, uri, partition, version,
                                       lookup)

    def _read_write_view(self, name: str, uri: str, partition: str, version: int,
                         lookup: Lookup) -> tuple[Any, WriteView]:
        ds = self.dataset(name, uri, version)
        d = decode(partition, version, ds.to_table(filter=lookup.where()), self.dim)
        live = ds.count_rows(filter=LIVE_ITEMS)
        return ds, WriteView(d.items, d.vectors, d.head, live, d.tombstones, d.ops)

    def following(self, partition: str, batch: Batch, version: int
                  ) -> Callable[[], Awaitable[None]] | None:
        """Start bringing the cached snapshot forward by a batch this process committed as
        ``version`` (only when it is the snapshot the batch was decided on): reads of
        ``version`` wait from now on, and the returned step does the work. The writer answers
        its writes in between, so their answers do not wait for it."""
        name = table_name(partition)
        snap = self.cache.get(name, batch.head.version)
        if not isinstance(snap, PartitionSnapshot) or version != batch.head.version + 1:
            return None
        loop, ready = asyncio.get_running_loop(), asyncio.Event()
        self._following[name] = (version, loop, ready)

        async def step() -> None:
            try:
                await asyncio.sleep(0)  # the answers go out first
                if self._follows(name, ready):  # not dropped meanwhile
                    self._forward_own(name, snap, partition, batch, version)
            finally:
                ready.set()
                if self._follows(name, ready):
                    del self._following[name]

        return step

    def _follows(self, name: str, ready: asyncio.Event) -> bool:
        held = self._following.get(name)
        return held is not None and held[2] is ready

    def _forward_own(self, name: str, snap: PartitionSnapshot, partition: str, batch: Batch,
                     version: int) -> None:
        try:
            items, vectors, tombstones = batch.changes(self.model_id)
            head = Head(partition, version, batch.hwm, batch.seq, self.model_id)
            rows = np.array(vectors, np.float32).reshape(-1, self.dim)
            new = evolve(snap, head, items, rows, tombstones, batch.ops)
        except Exception:  # the write is committed whatever happens here: read it again later
            log.exception("could not bring the snapshot of %s forward; it will be reread", name)
            self.cache.drop(name)
            return
        if 1 + new.count + len(new.tombstones) + len(new.ops) > self.max_rows:
            self.cache.drop(name)  # the next read takes the indexed path
        else:
            self.cache.put(name, new)


def cut(snap: PartitionSnapshot, lookup: Lookup) -> WriteView:
    """The write view of ``lookup`` taken from a full snapshot (the same rows a table read of
    ``lookup.where()`` would give)."""
    rows: set[int] = set()
    for n in lookup.numbers:
        i = snap.index_of(n)
        if i is not None:
            rows.add(i)
    for text in lookup.texts:
        same = snap.find_text(text)
        if same is not None:
            rows.add(snap.by_n[same.n])
    ordered = sorted(rows)
    return WriteView(
        [snap.items[i] for i in ordered], snap.vectors[ordered].reshape(-1, snap.vectors.shape[1]),
        snap.head, snap.count,
        {n: snap.tombstones[n] for n in lookup.numbers if n in snap.tombstones},
        {k: snap.ops[k] for k in lookup.ops if k in snap.ops})
