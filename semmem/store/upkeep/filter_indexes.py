"""The scalar indexes a filter reads (``semmem.items.filters.Filter.where``): a ``LABEL_LIST``
on the metadata ``tags`` (``array_has_all``), a B-tree on ``ts`` and bitmaps on ``kind`` and
``forgotten`` (every filtered read is ``LIVE_ITEMS AND …``), built with a partition's other
indexes (``updated`` already has its B-tree: blank-input recall reads it). With all of them a
filtered count or prefilter is answered from the indexes alone: without the bitmaps Lance read
``kind``, ``forgotten`` and ``tags`` of every row the filter selects (100k facts, 10 % selected:
a count took 19 ms, 0.5 ms with them; docs/benchmarks.md).

A table written only by code older than metadata has no ``tags`` column: nothing is built on
it until a write migrates it (the next pass then adds the index).
"""

from __future__ import annotations

from typing import Any

# column → index kind; each index is named ``<column>_idx`` like the write views' B-trees
FILTER_INDEXED = {"tags": "LABEL_LIST", "ts": "BTREE", "kind": "BITMAP", "forgotten": "BITMAP"}


def filter_columns(ds: Any) -> tuple[str, ...]:
    """The filtered columns the table has (``tags`` only once it was migrated)."""
    names = set(ds.schema.names)
    return tuple(c for c in FILTER_INDEXED if c in names)


def index_kind(column: str) -> str:
    """The kind of scalar index built on ``column``."""
    return FILTER_INDEXED.get(column, "BTREE")
