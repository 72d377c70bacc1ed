"""Storage of partitions in LanceDB: the only package that imports ``lancedb``, ``lance`` or
``pyarrow``.

    tables.py      Store: read views (cached per version), the CAS write, drop, upkeep calls
    connection.py  the connection, the registry and the partition tables' handles
    registry.py    partition names and store metadata (table ``_semmem``)
    schema.py      the partition table's layout: keys, rows, Mutation, Lookup, migrations
    views.py       the frozen views the store hands out (numpy only)
    reading.py     Arrow rows → views
    writes.py      the compare-and-swap write loop
    conflicts.py   lost race (start again) or real error
    upkeep.py      compaction, cleanup, orphan sweep, index build (by table URI)
    files.py       a table's files on its filesystem, and opening its dataset
    cache.py       the read views cache

Names are exported lazily, so ``semmem.store.views`` loads without the engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from semmem.store.schema import ItemRow, Lookup, Mutation, op_key, table_name
    from semmem.store.tables import Store
    from semmem.store.upkeep import MaintenanceReport
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
    "Store": "tables", "MaintenanceReport": "upkeep",
    "ItemRow": "schema", "Lookup": "schema", "Mutation": "schema", "op_key": "schema",
    "table_name": "schema",
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
