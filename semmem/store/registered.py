"""What the store's registry holds, through ``Store``: partitions (a deleted one's name
recorded again when it is written again; its table purged by the registry pass), the store's
metadata, retention overrides and the applied default, purge requests (``Registered``, this
part of ``Store``; the table itself is ``store/registry.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from semmem.errors import StoreChanged, Unavailable
from semmem.store.connection import Connection
from semmem.store.identity import GENERATION, Identity
from semmem.store.registry import GONE_KEEP_MS
from semmem.store.rows import table_name

if TYPE_CHECKING:
    from semmem.store.reads.snapshots import Snapshots
    from semmem.store.upkeep.compaction import Upkeep

log = logging.getLogger("semmem.store")


class Registered:
    """The registry's doors of ``Store``: what they use of it, and the doors."""

    conn: Connection
    snapshots: Snapshots
    upkeep: Upkeep
    _asked: tuple[int, dict[str, int]] | None
    _gone: tuple[float, dict[str, int]] | None = None  # deleted tables followed: when, which
    identity: Identity | None = None  # what this process opened the store as (``open``)
    changed: StoreChanged | None = None  # set once it found the store changed since
    on_changed: Callable[[StoreChanged], None] | None = None  # told of that, once

    async def request_purge(self, *partitions: str) -> None:
        """Ask the servers of this store to purge ``partitions`` (this process runs no
        maintenance of its own, or stops before its purges are done), in one registry commit;
        best effort: the servers' start-up purge is the fallback."""
        names = [table_name(p) for p in partitions]
        try:
            await self.conn.registry.request_purge(*names)
        except Exception:
            log.warning("could not ask the servers to purge partition table(s) %s",
                        ", ".join(names), exc_info=True)

    async def purge_requests(self) -> dict[str, int]:
        """Partitions whose purge another process asked for, with when it asked (its clock);
        the registry is read again only when its version moved."""
        version, asked = await self.conn.registry.purge_requests()
        if self._asked is not None and self._asked[0] == version:
            return self._asked[1]
        rows = await self.conn.registry.rows() if asked else {}  # no listing of the tables
        names = {k[2:]: str(v["partition"]) for k, v in rows.items() if k.startswith("t:")}
        mapped = {names[t]: at for t, at in asked.items() if t in names}
        self._asked = (version, mapped)
        return mapped

    async def meta(self) -> dict[str, Any] | None:
        """The store's metadata (schema version, model), or ``None`` for a new store."""
        return await self.conn.registry.meta()

    async def set_meta(self, value: dict[str, Any]) -> None:
        """Replace the store's metadata (used on creation, by reindex, restore and upgrade):
        a change of its model or format moves its generation (``store/identity.py``). This
        process holds the identity it wrote."""
        before = await self.conn.registry.meta()
        old, new = Identity.of(before), Identity.of(value)
        if before is not None and new.generation <= old.generation:  # never back
            changed = (new.model, new.format) != (old.model, old.format)
            value = {**value, GENERATION: old.generation + changed}
        await self.conn.registry.set_meta(value)
        self.identity = Identity.of(value)

    def current(self) -> None:
        """Refuse when this process found the store changed since it opened it.

        Raises:
            StoreChanged: it did (``retention_policies``).
        """
        if self.changed is not None:
            raise self.changed

    def stale(self, exc: StoreChanged) -> None:
        """This process can no longer write to the store: from now on it refuses, and whoever
        runs it is told once (``on_changed``: a server stops)."""
        if self.changed is None:
            self.changed = exc
            log.error("%s", exc.message)
            if self.on_changed is not None:
                self.on_changed(exc)

    async def retention(self) -> dict[str, int | None]:
        """Retention overrides by partition table name (max age in ms; ``None``: forever)."""
        return await self.conn.registry.retention()

    async def retention_policies(self) -> tuple[dict[str, int | None], tuple[bool, int | None]]:
        """The retention overrides (as ``retention``) and whether a deployment default was
        recorded as applied by a full sweep, with its max age in ms (``None``: forever), in
        one read of the registry. What this process holds of a table another process
        deleted since the last call is dropped (``follow_deleted``)."""
        policies = await self.conn.registry.policies()
        self.follow_deleted(self.conn.registry.gone)
        seen = self.conn.registry.seen_meta
        if seen is not None and self.identity is not None and self.changed is None:
            now = Identity.of(seen)
            changed = self.identity.changed(now, self.conn.uri)
            if changed is not None:
                self.stale(changed)
            else:
                self.identity = now
        self.current()
        return policies

    @property
    def gone_keep_s(self) -> float:
        """How long the registry tells other processes of a deleted table (``follow_deleted``)."""
        return GONE_KEEP_MS / 1000

    def follow_deleted(self, gone: dict[str, int]) -> None:
        """Drop what this process holds (views, datasets, the table's handle) of each table
        deleted since the last call (``gone``: the registry's entries, by table): memory back
        (a deletion is a tombstone version above every one held, so nothing held is served
        or decided on after it; a table removed by older code and made again numbered its
        versions from 1, and reaching the version held was taken for the deleted one). Past
        half the time the registry keeps the entries since the last call, some may have gone
        unseen: everything held is dropped."""
        now = time.monotonic()
        if self._gone is not None and now - self._gone[0] > self.gone_keep_s / 2:
            self.snapshots.clear()
            self.conn.forget_handles()
        else:
            seen = self._gone[1] if self._gone is not None else {}
            for name in [t for t, at in gone.items() if seen.get(t) != at]:
                self.snapshots.drop(name)
                self.conn.forget_table(name)
        self._gone = (now, dict(gone))

    async def set_applied_retention(self, max_age_ms: int | None) -> None:
        """Record the deployment default a full sweep just applied."""
        await self.conn.registry.set_applied_default(max_age_ms)

    async def set_retention(self, partition: str, max_age_ms: int | None, *,
                            inherit: bool = False) -> None:
        """Set ``partition``'s retention override (``None``: forever), or drop it (inherit)."""
        await self.conn.registry.set_retention(table_name(partition), max_age_ms, inherit)

    async def partitions(self) -> list[str]:
        """Names of all partitions that exist, sorted."""
        return await self.conn.registry.partitions(set(await self.conn.table_names()))

    async def _reborn(self, partition: str) -> None:
        """A deleted partition written again: its name back in the registry (as a new
        table's, ``Connection.table``), before the write commits on its tombstone."""
        try:
            await self.conn.registry.add_table(table_name(partition), partition)
        except Exception as exc:  # the engine's errors: the write is refused, nothing landed
            raise Unavailable(f"cannot record the partition: {exc}") from exc

    async def maintain_registry(self, *, retention: timedelta | None = None) -> None:
        """Maintain the tables of partitions deleted lately (their purge, whichever process
        deleted them and whatever became of it), then compact the registry and remove its
        old versions (purges deleted partitions' names)."""
        failed: Exception | None = None
        gone = set(await self.conn.registry.gone_tables())
        for name in sorted(gone & set(await self.conn.table_names())):
            try:
                tbl = await self.conn.db.open_table(name)
                await asyncio.to_thread(self.upkeep.maintain, await tbl.uri(), retention, True)
            except Exception as exc:  # the others and the registry all the same
                log.warning("maintenance of deleted partition table %s failed (%s)", name, exc)
                failed = failed or exc
        await self.conn.registry.maintain(retention)
        if failed is not None:
            raise failed
