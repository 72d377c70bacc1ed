"""Browsing a partition one item or one page at a time (MCP resources): past the index
threshold the items are read by number from the store, never by loading the partition."""

from __future__ import annotations

from typing import TYPE_CHECKING

from semmem.items import Item
from semmem.store.views import IndexedView

if TYPE_CHECKING:
    from semmem.store.tables import Store


async def item(store: Store, partition: str, n: int) -> Item | None:
    """The live item ``n``, if there is one."""
    view = await store.read_view(partition)
    if not isinstance(view, IndexedView):
        return view.get(n)  # a snapshot: the whole (small) partition is already in memory
    found = (await store.numbered(view, numbers=[n])).items
    return found[0] if found else None


async def page(store: Store, partition: str, after: int, limit: int) -> tuple[list[Item], bool]:
    """The first ``limit`` live items numbered above ``after``, and whether more follow."""
    view = await store.read_view(partition)
    if isinstance(view, IndexedView):
        items = (await store.numbered(view, after=after, limit=limit + 1)).items
    else:
        items = [it for it in view.items if it.n > after][:limit + 1]
    return items[:limit], len(items) > limit
