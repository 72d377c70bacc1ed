"""An indexed partition read under a filter expression (``semmem.scoping.Filter.where``).

The nearest live items among those the filter selects (a prefilter: the vector search sees
only them, so a narrow filter still fills its ``k``), and how many live items it selects. A
table written only by code older than metadata has no ``tags`` column and no metadata: a
filter on metadata selects nothing there, and the table is not read.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np

from semmem.store.files import open_dataset
from semmem.store.rows import ITEM_COLUMNS
from semmem.store.schema import LIVE_ITEMS
from semmem.store.views import Candidates, IndexedView

if TYPE_CHECKING:
    from semmem.store.tables import Store


def _none(store: Store, view: IndexedView) -> Candidates:
    return Candidates([], np.zeros((0, store.dim), np.float32), view.head)


async def _readable(store: Store, view: IndexedView, where: str) -> bool:
    """Whether the table can answer ``where`` (it names ``tags`` only with metadata)."""
    tbl = await store.conn.table(view.head.partition, create=False)
    if tbl is None:
        return False
    return "tags" not in where or "tags" in (await tbl.schema()).names


async def nearest_where(store: Store, view: IndexedView, query: np.ndarray, k: int,
                        where: str, columns: list[str] = ITEM_COLUMNS) -> Candidates:
    """The ``k`` live items nearest to ``query`` (cosine) among those ``where`` selects."""
    if not await _readable(store, view, where):
        return _none(store, view)
    return await store.nearest(view, query, k, columns, where)


async def count_where(store: Store, view: IndexedView, where: str) -> int:
    """How many live items ``where`` selects at ``view``'s version."""
    uri = await store.conn.uri_of(view.head.partition)
    if uri is None or not await _readable(store, view, where):
        return 0

    def count() -> int:
        # the snapshots' session: the indexes a count reads are loaded once, not per search
        ds = open_dataset(uri, store.storage_options, view.version,
                          session=store.snapshots.session)
        return int(ds.count_rows(filter=f"{LIVE_ITEMS} AND {where}"))

    return await asyncio.to_thread(count)
