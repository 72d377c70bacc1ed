"""Inspection: a partition's counters and last change, as owners see them (expired facts
left out, as every read leaves them out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from semmem.store.views import IndexedView

if TYPE_CHECKING:
    from semmem.memory import Memory


class PartitionStats(TypedDict):
    """Counters of one partition."""

    partition: str
    count: int
    highest: int
    forgotten: int
    version: int
    seq: int
    model: str | None
    purge_pending_s: float | None  # a dropped text's purge: seconds to its last pass, or None


async def stats(memory: Memory, partition: str) -> PartitionStats:
    """Counters of one partition (read without loading it when it is indexed)."""
    view = await memory.read_view(partition)
    forgotten = (await memory.store.count_forgotten(partition)
                 if isinstance(view, IndexedView) else len(view.tombstones))
    pending = getattr(memory.observer, "purge_pending", lambda _: None)(partition)
    return {"partition": partition, "count": view.count, "highest": view.hwm,
            "forgotten": forgotten, "version": view.version, "seq": view.seq,
            "model": view.model, "purge_pending_s": pending}


async def last_update(memory: Memory, partition: str) -> int | None:
    """When the partition last changed (its newest item or tombstone), if ever."""
    view = await memory.read_view(partition)
    if isinstance(view, IndexedView):
        items = (await memory.retention.recent(view, 1)).items
        return max((it.updated for it in items), default=None)
    return view.last_update
