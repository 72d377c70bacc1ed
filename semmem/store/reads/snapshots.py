"""Keeping each partition's snapshot current without rebuilding it.

A snapshot is built once from the whole table, with each row's address (its ``Layout``, what a
write commits against: ``store/commit/tail.py``); after that it moves forward: this process's own
commits are applied to it directly (their rows and addresses are known), and versions made
elsewhere (another process or replica, compaction, cleanup) are read as a delta — the fragments
the two manifests differ in; of their rows, those with a newer write sequence are the change,
the others moved (a compaction) or stayed. Writes decide on a view cut from the current
snapshot, so a write reads no table rows at all while the partition's snapshot is cached.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance.fragment import Session  # type: ignore[attr-defined]

from semmem.audience import not_models
from semmem.store.commit.tail import Layout, forward, layout_of, tail_limit
from semmem.store.files import incarnation, open_dataset
from semmem.store.handles import table_uri
from semmem.store.reads.cache import ViewCache
from semmem.store.reads.evolve import carried, changes, evolve
from semmem.store.reads.reading import decode, live_counts, not_models_text_bytes
from semmem.store.rows import Lookup, table_name
from semmem.store.schema import LIVE_ITEMS, Batch, partition_schema
from semmem.store.views import Head, IndexedView, PartitionSnapshot, WriteView, expiring

log = logging.getLogger("semmem.store")

# A delta of more rows than this (or than a quarter of the items) is read as a rebuild.
MAX_DELTA_ROWS = 4096
# A write to a partition of at most this many rows whose snapshot is not held builds it: that
# reads what its write view would (a request per fragment) and later writes read nothing.
# Larger partitions are written through the rows a write looks up.
WRITE_LOADS = 4096


class Snapshots:
    """The read views of a store's partitions, and the dataset handles and layouts writes
    commit against."""

    def __init__(self, dim: int, model_id: str, storage_options: dict[str, str],
                 max_views: int, max_items: int, max_rows: int, cache_bytes: int = 1 << 28,
                 tail_rows: int | None = None, write_loads: int = WRITE_LOADS) -> None:
        self.dim = dim
        self.schema = partition_schema(dim)
        self.tail_rows = tail_rows or tail_limit(dim)
        # Past this many rows a partition is read through its index, not held as a snapshot.
        self.max_rows = max_rows
        self.write_loads = min(write_loads, max_rows)
        # Whether every read checks for a newer version itself (read consistency 0); else the
        # table handle decides when to look.
        self.check_latest = True
        self.count_bytes = False  # a byte quota is set: write views carry their live text bytes
        self.model_id = model_id
        self.storage_options = storage_options
        self.cache = ViewCache(max_views, max_items)
        # Manifests already read are not read again when a version is opened a second time.
        self.session = Session(metadata_cache_size_bytes=max(cache_bytes // 4, 1 << 20),
                                     index_cache_size_bytes=1 << 20)
        self._datasets: OrderedDict[str, Any] = OrderedDict()
        self._layouts: OrderedDict[str, Layout] = OrderedDict()
        # Per table past the threshold: the rows the latest write decided on, and the table's
        # incarnation they were read from (what its commit carries a view forward by).
        self._looked: OrderedDict[str, tuple[str, WriteView]] = OrderedDict()
        self.max_datasets = max_views
        # Per table: the version this process just committed and whose snapshot is being
        # brought forward, with the event set when it is (a read of it waits, not rereads).
        self._following: dict[str, tuple[int, asyncio.AbstractEventLoop, asyncio.Event]] = {}
        # Per partition: a version confirmed the latest and when (monotonic), by a listing or
        # this process's own commit (shared with the writer: ``store/commit/fence.py``).
        self.confirmed: dict[str, tuple[int, float]] = {}
        self.rebuilds = 0  # full reads of a partition (for tests and benchmarks)
        self.forwards = 0  # snapshots brought forward by a delta read

    def drop(self, name: str) -> None:
        """Forget what is held for table ``name``."""
        for partition in [p for p in self.confirmed if table_name(p) == name]:
            del self.confirmed[partition]
        self.cache.drop(name)
        self._datasets.pop(name, None)
        self._layouts.pop(name, None)
        self._looked.pop(name, None)
        self._following.pop(name, None)  # its step puts nothing back; its readers read afresh

    def clear(self) -> None:
        """Forget everything."""
        for held in (self.cache, self.confirmed, self._datasets, self._layouts, self._looked,
                     self._following):
            held.clear()

    async def latest(self, partition: str, tbl: Any) -> int:
        """The table's latest version: asked of the dataset held for it (one LIST on object
        storage; the table handle would also read the new manifest), else of the table."""
        name = table_name(partition)
        if not self.check_latest:
            return int(await tbl.version())
        asked = time.monotonic()
        held = self._datasets.get(name)
        if held is None:  # open it at its latest version: the snapshot's read goes on from it
            uri = await table_uri(tbl)
            opened = await asyncio.to_thread(open_dataset, uri, self.storage_options,
                                             session=self.session, full_reads=True)
            self._keep(name, opened)
            version = int(opened.version)
        else:
            version = int(await asyncio.to_thread(lambda: held.latest_version))
        self.confirmed[partition] = (version, asked)  # the latest: a write's fence (fence.py)
        return version

    def known(self, partition: str) -> int | None:
        """The latest version this process holds a snapshot and layout of (a write decides on
        it without asking the store: the commit fails if a newer one exists)."""
        name = table_name(partition)
        snap, layout = self.cache.latest(name), self._layouts.get(name)
        if isinstance(snap, PartitionSnapshot) and layout is not None \
                and layout.version == snap.version and name not in self._following:
            return snap.version
        return None

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
        uri = await table_uri(tbl)
        older = self.cache.latest(name)
        if isinstance(older, PartitionSnapshot) and older.version < version:
            moved = await asyncio.to_thread(self._forward, name, uri, older, version)
            if moved is not None:
                self.forwards += 1
                self.cache.put(name, moved)
                return moved
        return await asyncio.to_thread(self._build, name, uri, partition, version)

    def _build(self, name: str, uri: str, partition: str, version: int) -> PartitionSnapshot:
        ds = self.dataset(name, uri, version)
        data = ds.to_table(with_row_address=True)
        d = decode(partition, version, data, self.dim)
        # The counts from the rows themselves (the head's own may be absent: an older layout).
        head = replace(d.head, live=len(d.items), expiring=expiring(d.items),
                       application=not_models(d.items))
        snap = PartitionSnapshot(d.items, d.vectors, head, d.tombstones, d.ops)
        self._remember(name, layout_of(ds, data, self.schema, self.tail_rows))
        self.rebuilds += 1
        self.cache.put(name, snap)
        return snap

    def _remember(self, name: str, layout: Layout) -> None:
        held = self._layouts.get(name)
        if held is not None and held.version > layout.version:
            return
        self._layouts[name] = layout
        self._layouts.move_to_end(name)
        while len(self._layouts) > self.max_datasets:
            self._layouts.popitem(last=False)

    def _forward(self, name: str, uri: str, snap: PartitionSnapshot, version: int
                 ) -> PartitionSnapshot | None:
        layout = self._layouts.get(name)
        if layout is None or layout.version != snap.version:
            return None
        ds = self.dataset(name, uri, version)
        moved, rows = forward(layout, ds, self.schema, self.tail_rows)
        rows = rows.filter(pc.greater(rows.column("seq"), snap.seq))
        if rows.num_rows > min(MAX_DELTA_ROWS, max(64, snap.count // 4)):
            return None
        if rows.num_rows == 0:  # no write since (compaction, cleanup, an index): same content
            head = replace(snap.head, version=version)
            new = PartitionSnapshot(snap.items, snap.vectors, head, snap.tombstones, snap.ops,
                                    by_n=snap.by_n, by_key=snap.by_key, derived=snap.derived)
        else:
            d = decode(snap.partition, version, rows, self.dim)
            new = evolve(snap, d.head, d.items, d.vectors, d.tombstones, d.ops)
        # The table's keys stay in Arrow: a Python set of them cost O(rows) per version.
        live = moved.keys.column("key").combine_chunks()
        named = list(new.ops)
        held = pc.is_in(pa.array(named, pa.string()), value_set=live).to_pylist() \
            if named else []
        pruned = not all(held)  # maintenance pruned expired records
        counts_held = new.head.live == new.count and new.head.expiring is not None \
            and new.head.application is not None
        if pruned or not counts_held:
            # A head without counts (written by older code) takes the snapshot's own.
            ops = {k: new.ops[k] for k, kept in zip(named, held, strict=True) if kept} \
                if pruned else new.ops
            head = new.head if counts_held else replace(
                new.head, live=new.count, expiring=expiring(new.items),
                application=not_models(new.items))
            new = PartitionSnapshot(new.items, new.vectors, head, new.tombstones, ops,
                                    by_n=new.by_n, by_key=new.by_key, derived=new.derived)
        if pc.count_distinct(live).as_py() != 1 + new.count + len(new.tombstones) + len(new.ops):
            return None  # not what the table holds: read it whole
        self._remember(name, moved)
        return new

    def dataset(self, name: str, uri: str, version: int) -> Any:
        """The table's dataset at ``version`` (the handle of the last write is reused)."""
        ds = self._datasets.get(name)
        if ds is None or ds.version != version:
            ds = open_dataset(uri, self.storage_options, version, session=self.session,
                              full_reads=True)
            self._keep(name, ds)
        else:
            self._datasets.move_to_end(name)
        return ds

    def held(self, name: str, version: int) -> Any | None:
        """The dataset held for table ``name`` if it is at ``version`` (nothing is read)."""
        ds = self._datasets.get(name)
        return ds if ds is not None and ds.version == version else None

    def _keep(self, name: str, ds: Any) -> None:
        self._datasets[name] = ds
        self._datasets.move_to_end(name)
        while len(self._datasets) > self.max_datasets:
            self._datasets.popitem(last=False)

    async def write_view(self, partition: str, tbl: Any, version: int,
                         lookup: Lookup) -> tuple[Any, WriteView, Layout]:
        """The view a write decides on at ``version``, the dataset to commit against and its
        layout: cut from the snapshot, built first when the partition is small enough to hold
        one, else read from the table (the rows looked up)."""
        name = table_name(partition)
        uri = await table_uri(tbl)
        held = self._datasets.get(name)
        if held is None or held.version != version:  # opening reads a manifest: off the loop
            ds = await asyncio.to_thread(self.dataset, name, uri, version)
        else:
            ds = held
            self._datasets.move_to_end(name)
        if isinstance(self.cache.latest(name), PartitionSnapshot) \
                or ds.count_rows() <= self.write_loads:
            snap = await self.at(partition, tbl, version)
            layout = self._layouts.get(name)
            if layout is not None and layout.version == version:
                return ds, cut(snap, lookup, count_bytes=self.count_bytes), layout
        read = await asyncio.to_thread(self._read_write_view, ds, partition, version, lookup)
        self._looked[name] = (incarnation(ds), read[1])
        self._looked.move_to_end(name)
        while len(self._looked) > self.max_datasets:
            self._looked.popitem(last=False)
        return read

    def _read_write_view(self, ds: Any, partition: str, version: int,
                         lookup: Lookup) -> tuple[Any, WriteView, Layout]:
        data = ds.to_table(filter=lookup.where(), with_row_address=True)
        d = decode(partition, version, data, self.dim)
        live, due, apps = d.head.live, d.head.expiring, d.head.application
        if live is None or due is None or apps is None:  # a head of older layout: counted
            live, due, apps = live_counts(ds)  # once, then carried
        looked = ["head", *lookup.ops, *(f"i:{int(n)}" for n in lookup.numbers)]
        layout = layout_of(ds, data, self.schema, self.tail_rows, complete=False,
                           looked=looked)
        size, others = (live_text_bytes(ds), not_models_text_bytes(ds)) if self.count_bytes \
            else (None, None)
        return ds, WriteView(d.items, d.vectors, d.head, live, d.tombstones, d.ops, size,
                             expiring=due, application=apps, application_bytes=others), layout

    def following(self, partition: str, batch: Batch, ds: Any, layout: Layout | None
                  ) -> Callable[[], Awaitable[None]] | None:
        """Take what this process committed as ``ds``'s version (its dataset and layout) and
        start bringing the cached snapshot forward by ``batch`` (only when it is the snapshot
        the batch was decided on): reads of the version wait from now on, and the returned
        step does the work. The writer answers its writes in between, so their answers do not
        wait for it."""
        name = table_name(partition)
        version = int(ds.version)
        snap = self.cache.get(name, batch.head.version)
        if not isinstance(self.cache.latest(name), PartitionSnapshot):
            self._publish(name, partition, batch, ds)
            return None
        # No layout: the commit was rebased over a compaction (the snapshot and layout it was
        # decided on are brought forward by the next read) or the partition is not held.
        if layout is None or not isinstance(snap, PartitionSnapshot):
            return None
        self._keep(name, ds)
        self._remember(name, layout)
        loop, ready = asyncio.get_running_loop(), asyncio.Event()
        self._following[name] = (version, loop, ready)

        async def step() -> None:
            try:
                await asyncio.sleep(0)  # the answers go out first
                if not self._follows(name, ready):  # dropped meanwhile
                    return
                # An item changed in place or forgotten copies every vector (older snapshots
                # keep theirs: 15 MB at 10k facts), off the loop: the next requests are read
                # and sent to the model meanwhile. New items only are appended in place.
                forward = partial(self._forward_own, snap, partition, batch, version)
                edits = any(n in snap.by_n for n in batch.items)
                new = await asyncio.to_thread(forward) if edits else forward()
                if self._follows(name, ready):  # not dropped meanwhile
                    self._put_own(name, new)
            finally:
                ready.set()
                if self._follows(name, ready):
                    del self._following[name]

        return step

    def _publish(self, name: str, partition: str, batch: Batch, ds: Any) -> None:
        """A partition read through its index: the view of the committed version from what
        the write decided (head, mark, live count), no read. Only its rows can differ from
        the version decided on (a commit Lance rebased went over a compaction or a record
        prune, which change no item), and only past the threshold (below it, reads hold the
        snapshot). What reads kept on the view decided on is carried forward by the items the
        commit changed, when the write read them from that view's table (its incarnation)."""
        self._keep(name, ds)  # the next read asks it for the latest version
        read_from, looked = self._looked.pop(name, ("", None))
        if batch.live is None or int(ds.count_rows()) <= self.max_rows:  # the manifest's
            return
        head = Head(partition, int(ds.version), batch.hwm, batch.seq, self.model_id,
                    batch.live, batch.expiring, batch.application)
        held, derived = self.cache.get(name, batch.head.version), {}
        if isinstance(held, IndexedView) and held.derived \
                and held.incarnation == read_from:
            change = changes(batch, looked, self.model_id)
            derived = carried(held.derived, change) if change is not None else {}
        self.cache.put(name, IndexedView(head, batch.live, incarnation(ds), derived))

    def _follows(self, name: str, ready: asyncio.Event) -> bool:
        return (self._following.get(name) or (None, None, None))[2] is ready

    def _forward_own(self, snap: PartitionSnapshot, partition: str, batch: Batch,
                     version: int) -> PartitionSnapshot | None:
        """``snap`` with this process's ``batch`` (committed as ``version``) applied, or ``None``
        (read it again); no cache is touched here: it may run on a worker thread."""
        try:
            items, vectors, tombstones = batch.changes(self.model_id)
            head = Head(partition, version, batch.hwm, batch.seq, self.model_id, batch.live,
                        batch.expiring, batch.application)
            rows = np.array(vectors, np.float32).reshape(-1, self.dim)
            return evolve(snap, head, items, rows, tombstones, batch.ops)
        except Exception:  # the write is committed whatever happens here: read it again later
            log.exception("could not bring the snapshot of %s forward; it will be reread",
                          table_name(partition))
            return None

    def _put_own(self, name: str, new: PartitionSnapshot | None) -> None:
        if new is None:  # read it again
            return self.cache.drop(name)
        if 1 + new.count + len(new.tombstones) + len(new.ops) <= self.max_rows:
            return self.cache.put(name, new)
        self.cache.drop(name)  # the next read takes the indexed path: from this view
        ds = self._datasets.get(name)
        table = incarnation(ds) if ds is not None and ds.version == new.head.version else ""
        self.cache.put(name, IndexedView(replace(new.head, live=new.count), new.count, table))

def live_text_bytes(ds: Any) -> int:
    """UTF-8 bytes of the live texts of a table version: its text column read in full (a
    partition too large for a snapshot, under a byte quota)."""
    texts = ds.to_table(columns=["text"], filter=LIVE_ITEMS).column("text")
    return int(pc.sum(pc.binary_length(texts)).as_py() or 0)


def cut(snap: PartitionSnapshot, lookup: Lookup, *, count_bytes: bool = False) -> WriteView:
    """The write view of ``lookup`` taken from a full snapshot (the same rows a table read of
    ``lookup.where()`` would give); with ``count_bytes``, the live texts' bytes too."""
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
    due, apps = snap.head.expiring, snap.head.application
    return WriteView(
        [snap.items[i] for i in ordered], snap.vectors[ordered].reshape(-1, snap.vectors.shape[1]),
        snap.head, snap.count,
        {n: snap.tombstones[n] for n in lookup.numbers if n in snap.tombstones},
        {k: snap.ops[k] for k in lookup.ops if k in snap.ops},
        snap.text_bytes if count_bytes else None,
        expiring=expiring(snap.items) if due is None else due,
        application=not_models(snap.items) if apps is None else apps,
        application_bytes=snap.not_models_bytes if count_bytes else None)
