"""A partition's counters for owners: ``semmem stats``, ``/admin/stats``, the console."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from semmem.store.views import IndexedView, ReadView

if TYPE_CHECKING:  # the store's engine loads only where a store is opened
    from semmem.store.tables import Store


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
    bytes: int  # UTF-8 bytes of the live texts (what SEMMEM_PARTITION_MAX_BYTES counts)
    max_items: int | None  # the partition quotas, if set
    max_bytes: int | None
    application: int  # the live pieces of the application's store items (their own store's)


async def partition_stats(store: Store, observer: object, view: ReadView) -> PartitionStats:
    """Counters of ``view``'s partition (read without loading it when it is indexed), the
    UTF-8 bytes of its live texts and the store's quotas."""
    partition = view.partition
    forgotten = (await store.count_forgotten(partition)
                 if isinstance(view, IndexedView) else len(view.tombstones))
    pending = getattr(observer, "purge_pending", lambda _: None)(partition)
    quota = store.quota
    return {"partition": partition, "count": view.count, "highest": view.hwm,
            "forgotten": forgotten, "version": view.version, "seq": view.seq,
            "model": view.model, "purge_pending_s": pending,
            "bytes": await store.text_bytes(view),
            "max_items": quota.max_items, "max_bytes": quota.max_bytes, "application": 0}
