"""The LanceDB connection of a store, its registry, and the handle of every partition table
(least recently used out): created by the first write that commits something, and migrated
by the first write to an older table (never by a read)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import lancedb
import pyarrow as pa

from semmem.errors import Unavailable
from semmem.store.commit.create import create_table
from semmem.store.commit.fence import Fence
from semmem.store.commit.tombstone import GONE, bury
from semmem.store.files import remote
from semmem.store.handles import table_uri
from semmem.store.registry import Registry
from semmem.store.rows import table_name
from semmem.store.schema import FILE_FORMAT, NEW_TABLE_OPTIONS, head_row, migrate_v1, migrate_v2
from semmem.store.upkeep.compaction import Upkeep


class Connection:
    """One store URI's connection and table handles."""

    def __init__(self, uri: str, schema: pa.Schema, model_id: str, upkeep: Upkeep, *,
                 read_consistency: timedelta, max_tables: int, cache_bytes: int) -> None:
        self.uri = uri
        self.schema = schema
        self.model_id = model_id
        self.upkeep = upkeep
        self.read_consistency = read_consistency
        self.max_tables = max_tables
        # LanceDB's own caches (index pages, file metadata) for every table this store opens;
        # without a bound they grow with the number of partitions ever touched.
        self.cache_bytes = cache_bytes
        self._db: lancedb.AsyncConnection | None = None
        # Told of a table this process migrated (its name): what is held of it was read at a
        # version of the older layout, which a commit must not build on.
        self.migrated: Callable[[str], None] = lambda name: None
        self._registry: Registry | None = None
        self._tables: OrderedDict[str, Any] = OrderedDict()
        self._creating: dict[str, asyncio.Lock] = {}
        self._current: set[str] = set()  # tables known to have the current schema

    async def open(self) -> None:
        """Connect (the engine's errors propagate; the store reports them)."""
        self._db = await lancedb.connect_async(
            self.uri,
            read_consistency_interval=self.read_consistency,
            storage_options=self.upkeep.storage_options or None,
            session=lancedb.Session(
                index_cache_size_bytes=self.cache_bytes,
                metadata_cache_size_bytes=max(self.cache_bytes // 4, 1 << 20),
            ),
        )
        self._registry = Registry(self._db, self.upkeep)

    def close(self) -> None:
        """Drop the connection and every handle."""
        self._tables.clear()
        self._db = self._registry = None

    @property
    def db(self) -> lancedb.AsyncConnection:
        """The LanceDB connection.

        Raises:
            Unavailable: the store is not open.
        """
        if self._db is None:
            raise Unavailable("store is not open")
        return self._db

    @property
    def registry(self) -> Registry:
        """Partition names and store metadata."""
        if self._registry is None:
            raise Unavailable("store is not open")
        return self._registry

    @property
    def open_tables(self) -> int:
        """Table handles held now."""
        return len(self._tables)

    async def table(self, partition: str, create: bool) -> Any:
        """The partition's table handle; ``None`` if absent and not ``create``."""
        name = table_name(partition)
        tbl: Any = self._tables.get(name)
        if tbl is not None:
            self._tables.move_to_end(name)
            return tbl
        try:
            tbl = await self.db.open_table(name)
        except ValueError:
            if not create:
                return None
            # One creation per table at a time in this process (one upload of a head, not
            # one per waiting write); across processes the strict first commit decides.
            async with self._creating.setdefault(name, asyncio.Lock()):
                tbl = self._tables.get(name) or await self._create(partition, name)
            self._creating.pop(name, None)
            self._current.add(name)
        self._tables[name] = tbl
        while len(self._tables) > self.max_tables:
            self._tables.popitem(last=False)
        return tbl

    async def writable(self, partition: str) -> Any:
        """The handle of an existing partition table, migrated to the current schema first if
        it is older. Only writes migrate: a read must never write (a schema-1 table reads as
        it is; its missing ``dkey`` column is only needed by a write's lookups, a missing
        ``tags`` column by a filtered search, which then finds no metadata: no write of code
        that knows metadata has touched the table). ``None`` when the partition has no table."""
        tbl = await self.table(partition, create=False)
        name = table_name(partition)
        if tbl is None or name in self._current:
            return tbl
        names = (await tbl.schema()).names
        if "dkey" not in names:
            await asyncio.to_thread(migrate_v1, await tbl.uri(), self.upkeep.storage_options)
        if "tags" not in names:
            await asyncio.to_thread(migrate_v2, await tbl.uri(), self.upkeep.storage_options)
        if "dkey" not in names or "tags" not in names:
            await tbl.checkout_latest()
            self.migrated(name)
        self._current.add(name)
        return tbl

    async def _create(self, partition: str, name: str) -> Any:
        await self.registry.add_table(name, partition)
        # Made here or by another process meanwhile: the table that is there is the one.
        await self.create_table(name, head_row(partition, self.model_id).table(self.schema))
        return await self.db.open_table(name)

    def forget_handle(self, partition: str) -> None:
        """Drop the cached handle of a partition (it failed, or its table was replaced)."""
        self._tables.pop(table_name(partition), None)

    def forget_table(self, name: str) -> None:
        """Drop the cached handle of table ``name`` (another process deleted it)."""
        self._tables.pop(name, None)
        self._current.discard(name)

    def forget_handles(self) -> None:
        """Drop every cached table handle."""
        self._tables.clear()
        self._current.clear()

    async def uri_of(self, partition: str) -> str | None:
        """The URI of the partition's table, ``None`` if it has none."""
        tbl = await self.table(partition, create=False)
        return None if tbl is None else await table_uri(tbl)

    async def table_names(self) -> list[str]:
        """Every table of the store (the registry included)."""
        names: list[str] = []
        page_token: str | None = None
        while True:
            resp = await self.db.list_tables(page_token=page_token, limit=1000)
            names.extend(resp.tables)
            page_token = resp.page_token
            if not page_token:
                return names

    async def drop(self, partition: str, *, fence: Fence, tail_rows: int,
                   durable: bool) -> bool:
        """Delete a partition: its names leave the registry, then its table is overwritten with
        a tombstone (``store/commit/tombstone.py``: a commit every racing write conflicts
        with, never a folder removed from under it). Returns whether it held a partition."""
        name = table_name(partition)
        tbl = await self.table(partition, create=False)
        if tbl is None:
            return False
        uri = await table_uri(tbl)
        # Before the tombstone: a write on it (the partition made again) records the name
        # anew after this, and other processes drop what they hold of the old table.
        await self.registry.mark_gone(name)
        await self.registry.remove_table(name)
        head = head_row(GONE, self.model_id).table(self.schema)
        began = time.monotonic()
        try:
            existed = await asyncio.to_thread(
                bury, uri, self.upkeep.storage_options, self.schema, head, tail_rows,
                fence=fence, discard=functools.partial(self.upkeep.discard_files, uri),
                leftover=functools.partial(self.upkeep.leftover, uri), durable=durable)
        except Exception:
            # Not deleted (or not known to be): listed again, so the partition is not left
            # holding facts under no name; a retried delete finishes it.
            with contextlib.suppress(Exception):
                await self.registry.add_table(name, partition)
            raise
        await tbl.checkout_latest()
        self._current.add(name)  # the tombstone is of the current schema
        if remote(uri):  # on S3: the old table's unfinished uploads (the new one's are younger)
            age = timedelta(seconds=time.monotonic() - began + fence.skew)
            await asyncio.to_thread(self.upkeep.abort_uploads, uri, age)
        return existed

    async def create_table(self, name: str, data: pa.Table) -> bool:
        """Make partition table ``name`` holding ``data`` (in the partition schema and
        ``schema.FILE_FORMAT``), unless a table of that name is there (made by another process
        meanwhile: ``store/commit/create.py``); returns whether this call made it."""
        return await create_table(self.upkeep, self.uri, name, data, self.schema,
                                  file_format=FILE_FORMAT)

    async def replace(self, partition: str, data: pa.Table) -> None:
        """Overwrite a partition's table with ``data`` in one commit (offline migrations), in
        the partition schema and ``schema.FILE_FORMAT``."""
        await self.db.create_table(table_name(partition), data=data, schema=self.schema,
                                   mode="overwrite", on_bad_vectors="null",
                                   storage_options=NEW_TABLE_OPTIONS)
        self.forget_handle(partition)
