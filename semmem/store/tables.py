"""``Store``: partitions of numbered items in LanceDB, one table per partition.

Every write is one Lance ``Update`` that replaces the head's fragment
(``store/commit/tail.py``), with Lance's own conflict retries turned off: two writers that read
the same head conflict at commit, one wins, the other re-reads and tries again. That makes
numbering, duplicate detection, cursor checks and the idempotency record atomic with the write,
across threads, processes and replicas on object storage, with no lock service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from semmem.contract import check_partition
from semmem.errors import DeadlineExceeded, ModelMismatch, SemmemError, Unavailable
from semmem.items import now_ms
from semmem.store import formats
from semmem.store.commit.conflicts import moved_on
from semmem.store.commit.fence import Fence
from semmem.store.commit.group import after
from semmem.store.commit.quota import Quota
from semmem.store.commit.tail import head_rows
from semmem.store.commit.writes import Writer
from semmem.store.connection import Connection
from semmem.store.files import incarnation, remote
from semmem.store.handles import table_uri
from semmem.store.identity import Identity, created, fenced, model_of
from semmem.store.reads.indexed import IndexedReads
from semmem.store.reads.reading import decode, not_models_in
from semmem.store.reads.snapshots import WRITE_LOADS, Snapshots
from semmem.store.registered import Registered
from semmem.store.rows import (
    KIND_HEAD,
    KIND_ITEM,
    Lookup,
    Mutation,
    Plan,
    table_name,
)
from semmem.store.schema import (
    HEAD_COLUMNS,
    LIVE_ITEMS,
    SCHEMA_VERSION,
    partition_schema,
)
from semmem.store.system import SystemRecords, Touch, touched
from semmem.store.upkeep.compaction import Upkeep
from semmem.store.upkeep.doors import Maintained
from semmem.store.upkeep.indexes import INDEX_THRESHOLD
from semmem.store.views import Head, IndexedView, PartitionSnapshot, ReadView, WriteView

V = TypeVar("V")
log = logging.getLogger("semmem.store")

# Object-store retries (the store's own options override them): a few quick retries of a
# failed request (503 SlowDown, a reset connection, a cut body), bounded in time, so a store
# that keeps failing is reported (503 with Retry-After) in seconds, not after the default 180 s.
RETRIES = {"client_max_retries": "3", "client_retry_timeout": "10", "download_retry_count": "2"}


class Store(Registered, IndexedReads, SystemRecords, Maintained):
    """Partitions of numbered items in LanceDB (local directory or object storage URI)."""

    def __init__(
        self,
        uri: str,
        *,
        dim: int,
        model_id: str,
        storage_options: dict[str, str] | None = None,
        read_consistency: timedelta = timedelta(0),
        cache_size: int = 256,
        version_retention: timedelta = timedelta(seconds=10),
        orphan_age: timedelta = timedelta(minutes=10),
        index_threshold: int = INDEX_THRESHOLD,
        cache_items: int = 2_000_000,
        cache_bytes: int = 1 << 30,
        tail_rows: int | None = None,
        write_loads: int = WRITE_LOADS,
        fence: Fence | None = None,
        quota: Quota | None = None,
    ) -> None:
        self.options: dict[str, Any] = {k: v for k, v in locals().items()  # ``store/apart.py``
                                        if k not in ("self", "uri")}
        self.uri = uri
        self.dim = dim
        self.model_id = model_id
        self.storage_options = {**(RETRIES if remote(uri) else {}), **(storage_options or {})}
        self.fence = fence or Fence()
        self.secret = b""  # the store's (read at ``open``): keys idempotency fingerprints
        # Other stores' secrets an import brought ledgers of, by key id (``Writes.digest_keys``)
        self.digest_keys: dict[str, bytes] = {}
        self.digest_keys_read = False
        self._asked: tuple[int, dict[str, int]] | None = None  # purge requests, by version
        # Below the floor a cleanup could remove a version a fenced commit must be checked
        # against (``store/commit/fence.py``): retention is raised to it.
        self.upkeep = Upkeep(self.storage_options, self.fence.retention(version_retention),
                             orphan_age, index_threshold, fence=self.fence)
        self.schema = partition_schema(dim)
        self.conn = Connection(uri, self.schema, model_id, self.upkeep,
                               read_consistency=read_consistency, max_tables=cache_size,
                               cache_bytes=cache_bytes)
        self.snapshots = Snapshots(dim, model_id, self.storage_options, cache_size, cache_items,
                                   index_threshold, cache_bytes, tail_rows, write_loads)
        self.snapshots.check_latest = read_consistency == timedelta(0)
        self.conn.migrated = self.snapshots.drop
        self.quota = quota or Quota()
        self.snapshots.count_bytes = self.quota.counts_bytes
        self._views = self.snapshots.cache
        self.writer = Writer(model_id, self.schema, self.snapshots.write_view,
                             self.snapshots.following, self.snapshots.known,
                             self.upkeep.discard_files, self.snapshots.latest,
                             tail_rows=self.snapshots.tail_rows,
                             refresh=read_consistency != timedelta(0), fence=self.fence,
                             leftover=self.upkeep.leftover, suspect=self.suspect,
                             storage_options=self.storage_options, durable=not remote(uri),
                             confirms=self.snapshots.check_latest,
                             confirmed=self.snapshots.confirmed, quota=self.quota,
                             reborn=self._reborn)

    @property
    def version_retention(self) -> timedelta:
        """How long old table versions are kept before cleanup."""
        return self.upkeep.version_retention

    @property
    def orphan_age(self) -> timedelta:
        """How old an unreferenced data file must be before the sweep deletes it."""
        return self.upkeep.orphan_age

    @orphan_age.setter
    def orphan_age(self, value: timedelta) -> None:
        self.upkeep.orphan_age = value

    @property
    def index_threshold(self) -> int:
        """Rows past which a partition is read through its vector index."""
        return self.upkeep.index_threshold

    # ----- lifecycle and registry ------------------------------------------------------------
    async def open(self, *, check_model: bool = True) -> None:
        """Connect, create the registry if needed and check the store's model.

        Raises:
            ModelMismatch: the store was embedded with another model (its message says both
                ways out: its own model, or ``semmem reindex``).
            Unavailable: the store cannot be reached.
        """
        try:
            await self.conn.open()
            meta = await self.meta()
        except Exception as exc:  # the engine's errors are not a documented tree
            raise Unavailable(f"cannot open store {self.uri}: {exc}") from exc
        try:
            self.secret = await self.conn.registry.secret()
        except Exception as exc:
            raise Unavailable(f"cannot open store {self.uri}: {exc}") from exc
        if meta is None:
            await self.set_meta(created(fenced({"schema": SCHEMA_VERSION, "dim": self.dim,
                                                formats.KEY: formats.FORMAT}, self.model_id)))
        elif check_model and model_of(meta) != self.model_id:
            raise ModelMismatch.between(f"store {self.uri}", model_of(meta), self.model_id)
        else:
            self.identity = Identity.of(meta)  # what every later registry read is held to

    async def close(self) -> None:
        """Drop cached handles."""
        self.conn.close()
        self.snapshots.clear()

    def cache_stats(self) -> dict[str, int]:
        """What the caches hold now: open tables, cached views and their items."""
        return {"tables": self.conn.open_tables, "snapshots": len(self._views),
                "items": self._views.items()}

    # ----- reads -----------------------------------------------------------------------------
    async def _read_latest(self, partition: str, read: Callable[[Any, int], Awaitable[V]],
                           empty: V) -> V:
        """``read`` at the latest version (``empty`` if the partition has no table); a read
        that fails because a newer commit superseded its version (a cleanup removed the files
        under it) is made again at the newer one."""
        tbl = await self.conn.table(partition, create=False)
        if tbl is None:
            self.snapshots.drop(table_name(partition))
            return empty
        for attempt in range(3):
            try:
                version = await self.snapshots.latest(partition, tbl)  # caches are by version
            except Exception as exc:
                self.conn.forget_handle(partition)
                raise Unavailable(f"cannot read partition: {exc}") from exc
            try:
                return await read(tbl, version)
            except SemmemError:
                raise
            except Exception as exc:
                if attempt == 2 or not await moved_on(tbl, version):
                    raise Unavailable(f"cannot read partition: {exc}") from exc
        raise AssertionError("unreachable")

    async def snapshot(self, partition: str) -> PartitionSnapshot:
        """Every live item of ``partition`` at the latest version (empty if never written)."""

        async def read(tbl: Any, version: int) -> PartitionSnapshot:
            return await self._snapshot_at(partition, tbl, version)

        return await self._read_latest(partition, read,
                                       PartitionSnapshot.empty(partition, self.dim))

    async def _snapshot_at(self, partition: str, tbl: Any, version: int) -> PartitionSnapshot:
        return await self.snapshots.at(partition, tbl, version)

    async def read_view(self, partition: str) -> ReadView:
        """The full snapshot up to the index threshold, else a head-and-count view (past it,
        items come from ``nearest`` or ``recent``: loading a million rows per version would
        cost seconds and gigabytes)."""

        async def read(tbl: Any, version: int) -> ReadView:
            name = table_name(partition)
            cached = self._views.get(name, version)
            if cached is not None:
                return cached
            if isinstance(self._views.latest(name), PartitionSnapshot) or await asyncio.to_thread(
                    self._rows_at, name, await table_uri(tbl), version) <= self.index_threshold:
                return await self._snapshot_at(partition, tbl, version)
            view = await asyncio.to_thread(self._indexed_view, name, await table_uri(tbl),
                                           partition, version)
            self._views.put(name, view)
            return view

        return await self._read_latest(partition, read,
                                       PartitionSnapshot.empty(partition, self.dim))

    def cached_view(self, partition: str) -> ReadView | None:
        """The partition's cached read view, of whatever version this process last saw (no
        table read: for what may lag, such as a write's hints)."""
        return self._views.latest(table_name(partition))

    def _rows_at(self, name: str, uri: str, version: int) -> int:
        # From the manifest (the dataset is kept for the snapshot's read): no data read.
        return int(self.snapshots.dataset(name, uri, version).count_rows())

    def _indexed_view(self, name: str, uri: str, partition: str, version: int) -> IndexedView:
        # The head row alone, from the tail, on the dataset held for the version (opened
        # with the shared session: a manifest already read is not read again); the live
        # count is the one it carries.
        ds = self.snapshots.dataset(name, uri, version)
        data = head_rows(ds, HEAD_COLUMNS, self.snapshots.tail_rows)
        head = decode(partition, version, data, self.dim).head
        live = head.live
        if live is None:  # a head of older layout: counted until its next commit
            live = int(ds.count_rows(filter=LIVE_ITEMS))
            head = replace(head, live=live)
        if head.application is None:  # so is what is not the model's (``semmem.audience``)
            head = replace(head, application=not_models_in(ds))
        return IndexedView(head, live, incarnation(ds))

    async def count_forgotten(self, partition: str) -> int:
        """How many tombstones (forgotten numbers) the partition holds."""
        tbl = await self.conn.table(partition, create=False)
        if tbl is None:
            return 0
        return int(await tbl.count_rows(f"kind = {KIND_ITEM} AND forgotten = true"))

    async def replace_vectors(self, partition: str, vectors: dict[int, np.ndarray]) -> None:
        """Rewrite the partition with new item vectors from this store's model, in one commit.

        An offline migration (``semmem reindex``; stop servers first); the vector dimension may
        change. Numbers, texts, tombstones and records are kept as they are.
        """
        tbl = await self.conn.writable(partition)
        if tbl is None:
            return
        data = (await tbl.to_arrow()).to_pylist()
        for row in data:
            if row["kind"] == KIND_HEAD:
                row["model"] = self.model_id
            elif row["kind"] == KIND_ITEM and not row["forgotten"]:
                row["vector"] = vectors[row["n"]].astype(np.float32).tolist()
                row["model"] = self.model_id
        await self.conn.replace(partition, pa.Table.from_pylist(data, schema=self.schema))
        self.snapshots.drop(table_name(partition))

    async def drop(self, partition: str) -> bool:
        """Delete a partition: from the registry, and its table overwritten with a tombstone
        (``Connection.drop``); its old versions and files go with the purge that follows.
        Returns whether it held a partition."""
        name = table_name(partition)
        self.snapshots.drop(name)
        try:
            existed = await self.conn.drop(partition, fence=self.fence,
                                           tail_rows=self.snapshots.tail_rows,
                                           durable=not remote(self.uri))
        except SemmemError:
            raise
        except Exception as exc:  # the engine's errors: a retried DELETE finishes it
            raise Unavailable(f"cannot delete the partition: {exc}") from exc
        finally:
            self.snapshots.drop(name)  # what was read while the tombstone went in
        return existed

    # ----- writes ----------------------------------------------------------------------------
    def coming(self, partition: str) -> contextlib.AbstractContextManager[None]:
        """Announce a write to ``partition`` while its text is being embedded: its group waits
        for it (see ``Writer.coming``)."""
        return self.writer.coming(partition)

    async def write(self, partition: str, plan: Plan, *, lookup: Lookup | None = None,
                    deadline_ms: int | None = None) -> dict[str, Any]:
        """Apply one write atomically, retrying on concurrent commits.

        ``plan`` sees a write view of the latest version: the head, the live count and the rows
        named by ``lookup`` (its operation records, the item numbers it targets, the items whose
        text equals one of its texts up to case and whitespace), so a write costs the same in a
        partition of ten items or of a million. It returns either the ``Mutation`` to commit
        (its ``result`` is returned) or a result dict to return without writing (replays,
        duplicates). It may raise domain errors; it is called again after a lost race.

        Raises:
            DeadlineExceeded: the deadline passed before the commit could start.
            Unavailable: the write kept losing races or the store failed.
        """
        decided: list[Touch] = []  # the system records' gate: what the commit did
        result = await self._write(partition, lambda view: touched(decided, view, plan(view)),
                                   lookup, deadline_ms)
        if decided and decided[0]:
            await self.written(partition, decided[0])
        return result

    async def _write(self, partition: str, plan: Plan, lookup: Lookup | None,
                     deadline_ms: int | None) -> dict[str, Any]:
        try:
            tbl = await self.conn.writable(partition)
        except SemmemError:
            raise
        except Exception as exc:  # the store failed opening the table: retry
            raise Unavailable(f"cannot open the partition: {exc}") from exc
        if tbl is None:
            # A partition without a table: decide on its empty state first, so that a write
            # that commits nothing (a refusal, a replay-free no-op) leaves no table behind.
            empty = WriteView([], np.zeros((0, self.dim), np.float32), Head.empty(partition), 0,
                              text_bytes=0, application_bytes=0)
            decision = plan(empty)
            if not isinstance(decision, Mutation):
                return decision
            self.quota.check(empty, after(empty, decision))  # a refusal leaves no table
            if deadline_ms is not None and now_ms() >= deadline_ms:
                raise DeadlineExceeded("deadline passed before the write was committed")
            check_partition(partition)  # every surface's new partitions are made here
            try:
                tbl = await self.conn.table(partition, create=True)
            except SemmemError:
                raise
            except Exception as exc:  # the store failed making the table or its name: retry
                raise Unavailable(f"cannot create the partition: {exc}") from exc
        return await self.writer.write(tbl, partition, plan, lookup or Lookup(), deadline_ms)

    async def suspect(self, partition: str) -> None:
        """Check a partition a commit may have reached blind, and repair what it finds (see
        ``store/upkeep/check.py``); never raises (the write that asked reports itself uncertain)."""
        from semmem.store.upkeep.check import check_partition  # a rare path

        try:
            found = await check_partition(self, partition, repair=True)
        except Exception:
            log.exception("could not check partition table %s", table_name(partition))
            return
        if found.problems:
            log.error("partition table %s: %s (repaired: %s)", table_name(partition),
                      "; ".join(found.problems), found.repaired)
        if found.repaired and found.forgotten:  # the text of a forget that won: purge it
            await self.request_purge(partition)
