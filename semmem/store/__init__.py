"""Storage of partitions in LanceDB: the only package that imports ``lancedb``, ``lance`` or
``pyarrow``.

    tables.py      Store: read views (cached per version), the CAS write, drop, upkeep calls
    connection.py  the connection, the registry and the partition tables' handles
    registry.py    partition names and store metadata (table ``_semmem``)
    rows.py        what the core hands the store: row keys, ItemRow, Mutation, Lookup, Plan
                   (numpy only)
    schema.py      the partition table's Arrow layout, a commit's rows, migrations
    formats.py     the store's format, recorded in its metadata (the format gate's steps:
                   ``semmem/lifecycle/upgrading.py``)
    views.py       the frozen views the store hands out (numpy only)
    files.py       a table's files on its filesystem, and opening its dataset
    modes.py       files for their owner only; the default data directory's link check
    commit/        the write path: writes (group commit, the CAS loop), tail (the commit),
                   fence, conflicts, quota
    reads/         the read path: snapshots, evolve, persistent, reading, recency, keyed,
                   filtered, cache
    upkeep/        the engine's upkeep: compaction (compaction, cleanup, orphan sweep, index
                   build and merge), check (``semmem check``), uploads, scratch
    copies/        whole partitions out and in (dump) and where they go (objects): backups

Names are exported lazily, so ``semmem.store.rows`` and ``semmem.store.views`` load without
the engine; entry points call ``quiet_engine_logs`` before anything loads it.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from semmem.store.rows import ItemRow, Lookup, Mutation, op_key, table_name
    from semmem.store.tables import Store
    from semmem.store.upkeep.compaction import MaintenanceReport
    from semmem.store.views import (
        Candidates,
        IndexedView,
        ItemSet,
        OpRecord,
        PartitionSnapshot,
        ReadView,
        Tombstone,
        WriteView,
    )

_HOMES = {
    "Store": "tables", "MaintenanceReport": "upkeep.compaction",
    "ItemRow": "rows", "Lookup": "rows", "Mutation": "rows", "op_key": "rows",
    "table_name": "rows",
    "Candidates": "views", "IndexedView": "views", "ItemSet": "views", "OpRecord": "views",
    "PartitionSnapshot": "views", "ReadView": "views", "Tombstone": "views",
    "WriteView": "views",
}
__all__ = [
    "Candidates", "IndexedView", "ItemRow", "ItemSet", "Lookup", "MaintenanceReport", "Mutation",
    "OpRecord", "PartitionSnapshot", "ReadView", "Store", "Tombstone", "WriteView", "op_key",
    "table_name",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'semmem.store' has no attribute {name!r}")
    return getattr(importlib.import_module(f"semmem.store.{home}"), name)


# Lance's one expected warning, lowered: a compaction that loses its commit to a concurrent
# write, which upkeep handles itself (it deletes the rewritten files and logs that at INFO).
ENGINE_LOG = "warn,lance::dataset::optimize=error"


def quiet_engine_logs() -> None:
    """Set Lance's log filter for this process, unless the operator set ``LANCE_LOG``.

    Lance logs from Rust straight to stderr (filtered by ``LANCE_LOG``; it cannot be routed
    through Python's logging) and reads the variable once, when the engine is first imported:
    so the entry points call this at start-up, before anything opens a store. Every other
    warning still shows.
    """
    os.environ.setdefault("LANCE_LOG", ENGINE_LOG)
