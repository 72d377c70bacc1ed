"""An indexed partition's most recently updated live items (a blank-input recall), read
through the B-tree on ``updated`` instead of every live row.

The newest ``k`` rows by ``updated`` all lie at or after some time: the first window tried
ends at the head's last write and is widened (by the rate the rows found so far suggest) until
``updated >= cutoff`` holds ``k`` live items. Each try is one filtered read: the B-tree picks
the indexed rows at or after the cutoff, fragments the index does not cover yet (the rolling
tail, rows written since the last fold) are scanned, and ``kind``/``forgotten`` are checked
on those rows only. The answer is exactly the full scan's: newest first, ties to the lower
number. A table without the B-tree (built before it was added) gets the same answer from
the same reads, each scanning the column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from semmem.store.reads.keyed import items_numbered
from semmem.store.rows import HEAD_KEY
from semmem.store.schema import LIVE_ITEMS
from semmem.store.views import Candidates, Head

FIRST_WINDOW_MS = 60_000  # the first window: the minute before the last write
MAX_GROWTH = 64  # a window grows at most this much per try
# Past this window every live row is read (a partition whose times span more than this).
WIDEST_MS = 1 << 42  # ~139 years


def newest_numbers(ds: Any, k: int, live: int | None = None, where: str = "") -> list[int]:
    """The numbers of the ``k`` live items of ``ds`` updated last (newest first, ties to the
    lower number), among those ``where`` selects if given (a filter expression); ``live`` is
    the live count if known."""
    if k <= 0:
        return []
    last = _last_write(ds)
    if last is None or (live is not None and live <= k):
        return _top(_live_rows(ds, None, where), k)
    window = FIRST_WINDOW_MS
    while window < WIDEST_MS:
        rows = _live_rows(ds, last - window, where)
        found = rows.num_rows
        if found >= k:
            return _top(rows, k)
        growth = MAX_GROWTH if found == 0 else min(MAX_GROWTH, max(2, 2 * k // found + 1))
        window *= growth
    return _top(_live_rows(ds, None, where), k)


def recent_items(ds: Any, head: Head, k: int, dim: int, live: int | None = None,
                 where: str = "") -> Candidates:
    """The ``k`` live items of ``ds`` updated last (among those ``where`` selects), in number
    order."""
    return items_numbered(ds, head, newest_numbers(ds, k, live, where), dim)


def _last_write(ds: Any) -> int | None:
    """When the partition was last written (its head row's ``updated``), by the key B-tree."""
    head = ds.to_table(columns=["updated"], filter=f"key = '{HEAD_KEY}'")
    if head.num_rows == 0:
        return None
    return int(max(head.column("updated").to_pylist()))


def _live_rows(ds: Any, cutoff: int | None, where: str = "") -> pa.Table:
    clause = LIVE_ITEMS if cutoff is None else f"updated >= {int(cutoff)} AND {LIVE_ITEMS}"
    return ds.to_table(columns=["n", "updated"],
                       filter=f"{clause} AND {where}" if where else clause)


def _top(rows: pa.Table, k: int) -> list[int]:
    numbers = rows.column("n").to_numpy()
    updated = rows.column("updated").to_numpy()
    order = np.lexsort((numbers, -updated))[:k]  # newest first, then the lower number
    return [int(n) for n in numbers[order]]
