"""An owner's passes over a store, run now: maintenance, a purge, the re-embedding migration
(``semmem maintain``, ``semmem purge``, ``semmem reindex``; a server's passes are scheduled by
``semmem.scheduling``)."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from semmem.importing import reembed
from semmem.store.identity import fenced, moved

if TYPE_CHECKING:
    from semmem.embedding.queue import ModelQueue
    from semmem.store.tables import Store
    from semmem.store.upkeep.compaction import MaintenanceReport


async def maintain(store: Store, partition: str | None = None, *,
                   retention: timedelta | None = None) -> builtins.list[MaintenanceReport]:
    """Compact, prune and purge one partition, or every partition and the registry."""
    names = [partition] if partition is not None else await store.partitions()
    reports = [r for name in names
               if (r := await store.maintain(name, retention=retention)) is not None]
    if partition is None:
        await store.maintain_registry(retention=retention)
    return reports


async def purge(store: Store, partition: str) -> None:
    """Take what a write dropped off every file of ``partition`` from a process with no
    maintenance schedule (the CLI): a purge request for the servers of the store, a pass now
    (it compacts the dropped rows away, keeping the versions younger than the retention),
    then, once those are past the retention, the pass that removes them (as ``Purger``)."""
    await store.request_purge(partition)
    await store.maintain(partition)
    # The dropped rows' versions were made before the first pass ended, by clocks at most
    # the skew apart: past the retention by then (the second's margin: its own start).
    await asyncio.sleep(store.version_retention.total_seconds() + store.fence.skew + 1.0)
    await store.maintain(partition)


async def reindex(store: Store, model: ModelQueue, partition: str | None = None, *,
                  batch_size: int = 256,
                  progress: Callable[[int, int], None] | None = None) -> int:
    """Re-embed every item with ``model``: of one partition, or of every partition
    and then record the model as the store's. Returns how many items were re-embedded.

    A whole store's reindex first records the new model as the store's, moving its
    generation (``store/identity.py``), and gives the processes serving it the time to read
    that (``settle_s``): each then refuses every write and stops, and a server started with
    the old model meanwhile is refused at open, so none writes a vector of the old model while
    (or after) the partitions are re-embedded. One cut short leaves partitions of the old
    model, refused to every writer and reported by ``semmem check``: run it again.

    Args:
        progress: called with (items done so far, items in all).
    """
    if partition is None:
        meta = await store.meta() or {}
        await store.set_meta(moved(fenced({**meta, "dim": model.embedder.dim},
                                          model.embedder.model_id)))
        await asyncio.sleep(settle_s(store))
    names = [partition] if partition is not None else await store.partitions()
    return await reembed(store, model.embed, names, batch_size, progress)


def settle_s(store: Store) -> float:
    """How long after a store-wide change every process serving the store has read it and
    ended the commits it decided before: its policies' refresh, then a commit's budget."""
    from semmem.lifecycle.retention import REFRESH_S

    return REFRESH_S + store.fence.floor
