"""Owners' clean-up of a memory that grew: groups of facts that probably restate or
supersede each other, over a whole partition (the write-time hints are ``rules.Hints``).

Below the index threshold every pair is scored exactly from the snapshot; past it, each fact's
nearest neighbours come from the partition's vector index, many searches per index query.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from semmem.items import Vectors
from semmem.ranking.similar import Group, groups
from semmem.store.views import IndexedView, PartitionSnapshot

if TYPE_CHECKING:
    from semmem.lifecycle.retention import Retention
    from semmem.store.tables import Store

NEIGHBOURS = 8  # index neighbours per fact: a group rarely has more members
QUERY_BLOCK = 1024  # facts searched per index query


async def similar_groups(store: Store, partition: str, threshold: float,
                         retention: Retention | None = None) -> list[Group]:
    """The partition's recallable facts (none expired, with ``retention``) in groups of likely
    restatements (``groups``)."""
    view = await store.read_view(partition)
    snap = await store.snapshot(partition)
    if retention is not None:
        live = await retention.live(snap)
        assert isinstance(live, PartitionSnapshot)
        snap = live
    if not isinstance(view, IndexedView):
        return await asyncio.to_thread(groups, snap, threshold)
    found = await _index_neighbours(store, view, snap)
    return await asyncio.to_thread(groups, snap, threshold,
                                   lambda block: [found[i] for i in block])


async def _index_neighbours(store: Store, view: IndexedView, snap: PartitionSnapshot
                            ) -> list[tuple[npt.NDArray[np.int64], Vectors]]:
    """Each snapshot row's nearest rows and cosines, from the vector index."""
    out: list[tuple[npt.NDArray[np.int64], Vectors]] = []
    for start in range(0, snap.size, QUERY_BLOCK):
        block = snap.vectors[start:start + QUERY_BLOCK]
        for numbers, scores in await store.neighbours(view, block, NEIGHBOURS + 1):
            rows = [(snap.index_of(n), sc) for n, sc in zip(numbers, scores, strict=True)]
            kept = [(r, sc) for r, sc in rows if r is not None]
            out.append((np.array([r for r, _ in kept], dtype=np.int64),
                        np.array([sc for _, sc in kept], dtype=np.float32)))
    return out
