"""An indexed partition read under a filter expression (``semmem.items.filters.Filter.where``).

The nearest live items among those the filter selects (a prefilter: the vector search sees
only them, so a narrow filter still fills its ``k``), and how many live items it selects (a
count kept on the view answers while its version is still of its table). A
table written only by code older than metadata has no ``tags`` column and no metadata: a
filter on metadata selects nothing there, and the table is not read.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from semmem.store.files import incarnation, open_dataset
from semmem.store.reads.recency import recent_items
from semmem.store.rows import ITEM_COLUMNS, table_name
from semmem.store.schema import LIVE_ITEMS
from semmem.store.views import Candidates, IndexedView

if TYPE_CHECKING:
    from semmem.store.connection import Connection
    from semmem.store.reads.snapshots import Snapshots


class Store(Protocol):
    """What a filtered read uses of the store (``semmem.store.tables.Store`` is one): declared
    here, so the store's own parts (``store/system.py``) can read through it without a loop."""

    dim: int
    storage_options: dict[str, str]
    snapshots: Snapshots
    conn: Connection

    async def nearest(self, view: IndexedView, query: np.ndarray, k: int,
                      columns: list[str], where: str | None = None) -> Candidates:
        """The ``k`` live items nearest to ``query`` at ``view`` (``reads/indexed.py``)."""
        ...


def _none(store: Store, view: IndexedView) -> Candidates:
    return Candidates([], np.zeros((0, store.dim), np.float32), view.head)


def _answers(ds: Any, where: str) -> bool:
    """Whether a table version can answer ``where``: it names ``tags`` only with metadata,
    which a table written only by code older than metadata has no column for."""
    return "tags" not in where or "tags" in ds.schema.names


def _version(store: Store, uri: str, view: IndexedView) -> Any:
    """``view``'s version opened in the snapshots' session: the indexes a filtered read uses
    are loaded once, not per read."""
    return open_dataset(uri, store.storage_options, view.version,
                        session=store.snapshots.session)


async def _readable(store: Store, view: IndexedView, where: str) -> bool:
    """Whether the table can answer ``where``, from the dataset held for the view's version
    (read once per version, not per search)."""
    if "tags" not in where:
        return True
    name = table_name(view.head.partition)
    ds: Any = store.snapshots.held(name, view.version)
    if ds is None:
        uri = await store.conn.uri_of(view.head.partition)
        if uri is None:
            return False
        ds = await asyncio.to_thread(store.snapshots.dataset, name, uri, view.version)
    return _answers(ds, where)


async def nearest_where(store: Store, view: IndexedView, query: np.ndarray, k: int,
                        where: str, columns: list[str] = ITEM_COLUMNS) -> Candidates:
    """The ``k`` live items nearest to ``query`` (cosine) among those ``where`` selects."""
    if not await _readable(store, view, where):
        return _none(store, view)
    return await store.nearest(view, query, k, columns, where)


async def recent_where(store: Store, view: IndexedView, k: int, where: str) -> Candidates:
    """The ``k`` live items ``where`` selects updated last at ``view``'s version (a blank
    recall under a scope), found as an unfiltered one finds them (``recency``: the B-tree on
    ``updated``), the partition never loaded; in number order."""
    uri = await store.conn.uri_of(view.head.partition)
    if uri is None:
        return _none(store, view)

    def read() -> Candidates:
        ds = _version(store, uri, view)
        if not _answers(ds, where):
            return _none(store, view)
        return recent_items(ds, view.head, k, store.dim, view.count, where)

    return await asyncio.to_thread(read)


async def count_where(store: Store, view: IndexedView, where: str,
                      known: int | None = None) -> tuple[int, bool]:
    """How many live items ``where`` selects at ``view``'s version, and whether that version
    is still of the view's table (``incarnation``): only then is ``known`` (a count kept on the
    view) the answer, and only then may the count be kept on it. The version is opened again
    for that (one request on object storage: Lance's check of its manifest, the manifest
    itself kept in the session), because the view may be one another replica's delete and
    rewrite of the partition took up to the same version number."""
    uri = await store.conn.uri_of(view.head.partition)
    if uri is None:
        return 0, False

    def count() -> tuple[int, bool]:
        ds = _version(store, uri, view)
        same = incarnation(ds) == view.incarnation
        if same and known is not None:
            return known, True
        if not _answers(ds, where):
            return 0, same
        return int(ds.count_rows(filter=f"{LIVE_ITEMS} AND {where}")), same

    return await asyncio.to_thread(count)


async def numbers_where(store: Store, view: IndexedView, where: str) -> list[int]:
    """The numbers of the live items ``where`` selects at ``view``'s version, ascending (read
    through the filter's indexes: only the selected rows' numbers are read)."""
    uri = await store.conn.uri_of(view.head.partition)
    if uri is None:
        return []

    def read() -> list[int]:
        ds = _version(store, uri, view)
        if not _answers(ds, where):
            return []
        found = ds.to_table(columns=["n"], filter=f"{LIVE_ITEMS} AND {where}").column("n")
        return sorted(int(n) for n in found.to_pylist())

    return await asyncio.to_thread(read)
