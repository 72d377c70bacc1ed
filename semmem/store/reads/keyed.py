"""Items of a partition read past its index threshold by number: one item, or a page in number
order, without loading the partition (what browsing an indexed partition needs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from semmem.store.reads.reading import candidates
from semmem.store.rows import ITEM_COLUMNS
from semmem.store.schema import LIVE_ITEMS
from semmem.store.views import Candidates, Head


def numbers_after(ds: Any, after: int, limit: int) -> list[int]:
    """The first ``limit`` live numbers above ``after``, in order (one column read)."""
    cols = ds.to_table(columns=["n"],
                       filter=f"{LIVE_ITEMS} AND n > {int(after)}")
    numbers = cols.column("n").to_numpy()
    if len(numbers) > limit:
        numbers = np.partition(numbers, limit - 1)[:limit]
    return [int(n) for n in np.sort(numbers)]


def items_numbered(ds: Any, head: Head, numbers: list[int], dim: int) -> Candidates:
    """The live items among ``numbers``, in number order, read by their keys."""
    if not numbers:
        empty: pa.Table = ds.to_table(columns=ITEM_COLUMNS, limit=0)
        return candidates(head, empty, dim)
    keys = ", ".join(f"'i:{int(n)}'" for n in numbers)
    data = ds.to_table(columns=ITEM_COLUMNS,
                       filter=f"key IN ({keys}) AND {LIVE_ITEMS}")
    return candidates(head, data, dim)
