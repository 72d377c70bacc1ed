"""The owner's operations as ``Memory``'s doors (``Owners``, this part of ``Memory``): import,
export and delete a partition, its counters, groups and last change, the passes run now, the
check, a backup; each a thin call into its module here in ``lifecycle/``. The doors of a
partition's data cover the application's store too (``lifecycle/apart.py``: ``cores``): a
delete leaves no byte in either, an export holds both, an import puts the store items' pieces
back in the application's store, a backup, a check, a pass and a reindex cover both."""

from __future__ import annotations

import asyncio
import builtins
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from semmem import rules
from semmem.conversations import ledgers
from semmem.conversations.forgotten import rekeyed
from semmem.importing import ImportReport, Write, import_records
from semmem.lifecycle import inspection, passes
from semmem.lifecycle.apart import Apart
from semmem.lifecycle.consolidation import similar_groups
from semmem.lifecycle.retention import Retention
from semmem.lifecycle.stats import PartitionStats, partition_stats
from semmem.ranking.similar import Group
from semmem.stored.fields import of_store

if TYPE_CHECKING:  # the store's engine loads only where a store is opened
    from semmem.embedding.queue import ModelQueue
    from semmem.items import Item
    from semmem.lifecycle.backup_format import Manifest
    from semmem.scheduling.observing import WriteObserver
    from semmem.store.commit.quota import Quota
    from semmem.store.copies.objects import Objects
    from semmem.store.tables import Store
    from semmem.store.upkeep.check import CheckReport
    from semmem.store.upkeep.compaction import MaintenanceReport
    from semmem.store.views import Candidates, IndexedView, PartitionSnapshot, ReadView


class Owners(Apart):
    """The owner's doors of ``Memory``: what they use of it, and the doors (the modules of
    ``lifecycle/`` that drive a memory take an ``Owners``, so none of them imports
    ``semmem.memory``)."""

    store: Store
    model: ModelQueue
    observer: WriteObserver | None
    retention: Retention
    similar_threshold: float
    _write: Write
    read_view: Callable[[str], Awaitable[ReadView]]
    snapshot: Callable[[str], Awaitable[PartitionSnapshot]]
    partitions: Callable[[], Awaitable[builtins.list[str]]]
    list: Callable[..., Awaitable[builtins.list[Item]]]
    digest_keys: Callable[[Collection[str]], Awaitable[dict[str, bytes]]]

    async def import_(
        self, partition: str, records: Iterable[dict[str, Any]], *, batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Bulk-add records (``{"text", "n"?, "ts"?, "updated"?, record fields…}``): numbers
        kept when free (an export imports back unchanged), texts already present skipped;
        a store item's piece (``store``) into the application's store; an export's ledger
        lines kept (``conversations.ledgers``: what its store forgot stays forgotten here)."""
        records = builtins.list(records)
        lines = [r for r in records if ledgers.is_ledger_line(r)]
        if lines:
            await self.keep_ledgers(partition, lines)
            records = [r for r in records if not ledgers.is_ledger_line(r)]
        if not self.apart:
            theirs = [r for r in records if of_store(r)]
            if theirs:
                mine = await self.import_(partition, [r for r in records if not of_store(r)],
                                          batch_size=batch_size, progress=progress)
                other = await (await self.application()).import_(
                    partition, theirs, batch_size=batch_size, progress=progress)
                return ImportReport(mine.imported + other.imported,
                                    mine.duplicates + other.duplicates,
                                    mine.batches + other.batches)
        # a conversation's pieces keyed by another store's secret: keyed by this one's
        records = rekeyed(builtins.list(records), self.store.secret)
        return await import_records(self._write, functools.partial(self.model.embed,
                                                                 caller=partition),
                                    partition, records,
                                    batch_size=batch_size, progress=progress,
                                    alive=self.retention.alive(
                                        await self.retention.max_age(partition)))

    async def keep_ledgers(self, partition: str, lines: Sequence[dict[str, Any]]) -> None:
        """Keep an export's ledger lines (checked: ``ledgers.checked``) in ``partition``:
        their digest keys in the registry first, so a process that reads the partition's
        keys row finds them there."""
        keys, found = ledgers.imported([ledgers.checked(line, "ledger line") for line in lines],
                                       self.store.secret)
        if not found:
            return
        registry = self.store.conn.registry
        for key, value in ledgers.registry_entries(keys).items():
            await registry.put(key, value)
        self.store.digest_keys.update(keys)
        await self._write(partition, lambda view: ledgers.kept_lines(view, keys, found), None,
                          records=[*found, ledgers.KEYS_ROW])

    async def delete_partition(self, partition: str) -> bool:
        """Delete the partition: at once for every reader and writer (a tombstone every racing
        write conflicts with, ``Store.drop``), and from every file within the forget window
        (a purge, as after a forget; here, with no maintenance of this process's own, before
        this returns); in the application's store too. Returns whether it existed."""
        existed = False
        for core in await self.cores():
            existed = await core.drop_partition(partition) or existed
        return existed

    async def drop_partition(self, partition: str) -> bool:
        """``delete_partition`` in this core's store alone."""
        existed = await self.store.drop(partition)
        if not existed:
            return False
        if self.observer is not None:
            self.observer.written(partition, True)  # the purge and its follow-up
            self.observer.partition_deleted(partition)
        else:
            # Once the versions before the tombstone are past the fence's floor (a few
            # seconds), every one of them goes with its files.
            await self.store.maintain(partition, retention=timedelta(0))
        return existed

    async def export(self, partition: str) -> AsyncIterator[dict[str, Any]]:
        """Every live item as a JSON-ready record (the JSONL export format): the model's,
        then the application's store items' pieces (their ``store`` field)."""
        for item in await self.exported(partition):
            yield item.public()

    async def exported(self, partition: str) -> builtins.list[Item | ledgers.LedgerLine]:
        """The items ``export`` makes records of, in its order, then the partition's ledger
        lines (``conversations.ledgers``; a door streams their records a chunk at a time:
        ``protocol.jsonio.jsonl_chunks``)."""
        items: builtins.list[Item | ledgers.LedgerLine] = [
            item for core in await self.cores() for item in await core.list(partition)]
        ops = (await self.store.snapshot(partition)).ops.values()
        others = await self.digest_keys(()) if any(r.key == ledgers.KEYS_ROW for r in ops) \
            else {}
        return [*items, *ledgers.export_lines(ops, self.store.secret, others)]

    async def stats(self, partition: str) -> PartitionStats:
        """Counters of one partition (the expired left out), its text bytes and the quotas
        (see ``semmem.lifecycle.stats``); ``application``: the live pieces of the application's
        store items under its name (their own store's)."""
        stats = await partition_stats(self.store, self.observer, await self.read_view(partition))
        for core in (await self.cores())[1:]:
            stats["application"] = (await core.read_view(partition)).count
        return stats

    async def similar(self, partition: str, threshold: float | None = None) -> builtins.list[Group]:
        """Groups of recallable facts that probably restate or supersede each other: each fact
        linked to its best match, closest pair's group first, newest first in each (an owner's
        clean-up; ``threshold``: the hints' by default)."""
        return await similar_groups(self.store, partition,
                                    self.similar_threshold if threshold is None else threshold,
                                    self.retention)

    async def last_update(self, partition: str) -> int | None:
        """When the partition last changed (its newest item or tombstone), if ever."""
        return await inspection.last_update(await self.read_view(partition), self.retention)

    async def maintain(self, partition: str | None = None, *,
                       retention: timedelta | None = None
                       ) -> builtins.list[MaintenanceReport]:
        """Compact, prune and purge one partition, or every partition and the registry (of
        both stores)."""
        return [r for core in await self.cores()
                for r in await passes.maintain(core.store, partition, retention=retention)]

    async def reindex(self, partition: str | None = None, *, batch_size: int = 256,
                      progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every item with this memory's model (an offline migration); see
        ``semmem.lifecycle.passes.reindex``."""
        return sum([await passes.reindex(core.store, self.model, partition,
                                         batch_size=batch_size, progress=progress)
                    for core in await self.cores()
                    if partition is None or partition in await core.store.partitions()])


    async def expire(self, partition: str, numbers: builtins.list[int]) -> builtins.list[int]:
        """Forget those of ``numbers`` that are expired at the decided version, through the
        forget path (their texts leave every file within the forget window); returns them."""
        alive = self.retention.alive(await self.retention.max_age(partition))
        result = await self._write(partition, rules.expire(numbers, alive), None, dropped=True,
                                   numbers=numbers)
        return list(result["expired"])

    async def stored_view(self, partition: str) -> ReadView:
        """The store's read view, the expired still in (what the retention sweep looks for)."""
        return await self.store.read_view(partition)

    @property
    def quota(self) -> Quota:
        """The store's per-partition quotas."""
        return self.store.quota

    @property
    def version_retention(self) -> timedelta:
        """How long the store keeps old table versions (a purge waits this out)."""
        return self.store.version_retention

    async def purge(self, partition: str) -> None:
        """Take what writes dropped off every file of ``partition`` now (``passes.purge``),
        in each store that holds it."""
        await asyncio.gather(*[passes.purge(core.store, partition)
                               for core in await self.cores()
                               if core is self or partition in await core.store.partitions()])

    async def numbered(self, view: IndexedView, *, numbers: builtins.list[int] | None = None,
                       after: int = 0, limit: int = 100) -> Candidates:
        """Items of an indexed partition by number, the expired still in (``Store.numbered``)."""
        return await self.store.numbered(view, numbers=numbers, after=after, limit=limit)

    async def check(self, partition: str, *, repair: bool = False) -> CheckReport:
        """A partition's invariants, repaired with ``repair`` (``store/upkeep/check.py``)."""
        report = await self.check_here(partition, repair=repair)
        for core in (await self.cores())[1:]:  # its store items, if it has any
            if partition in await core.store.partitions():
                found = await core.check_here(partition, repair=repair)
                report.problems += [f"the application's store: {p}" for p in found.problems]
                report.rows += found.rows
                report.repaired = report.repaired or found.repaired
        return report

    async def owned_partitions(self) -> builtins.list[str]:
        """Names of every partition of either store (the owner's listings), sorted."""
        return sorted({name for core in await self.cores()
                       for name in await core.store.partitions()})

    async def check_here(self, partition: str, *, repair: bool = False) -> CheckReport:
        """``check`` of this core's store alone, its vectors included: the store's model's
        (``lifecycle/vectors.py``)."""
        from semmem.lifecycle.vectors import check_vectors
        from semmem.store.upkeep.check import check_partition

        report = await check_partition(self.store, partition, repair=repair)
        vectors = await check_vectors(self.store, self.model, partition, repair=repair)
        report.problems += vectors
        report.repaired = report.repaired or (repair and bool(vectors))
        if await self.store.relist(partition, repair=repair):  # a system record, from the data
            report.problems.append("the partition's listing record was not as its store "
                                   "items make it" + (" (rebuilt)" if repair else ""))
            report.repaired = report.repaired or repair
        return report

    async def backup(self, target: Objects, *, default_retention_ms: int | None = None
                     ) -> Manifest:
        """Back the store up into ``target`` (``semmem.lifecycle.backup.create_backup``)."""
        from semmem.lifecycle.backup import create_backup

        return await create_backup(self.store, target, default_retention_ms=default_retention_ms,
                                   application=(await self.application()).store)
