"""Browsing a partition one item or one page at a time (MCP resources): past the index
threshold the items are read by number from the store, never by loading the partition. The
expired are left out, as every read leaves them out, and so is every item the caller may not
see (``semmem.audience``: the model never sees the application's store items)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from semmem.audience import Caller, may_see
from semmem.items import Item
from semmem.lifecycle.retention import is_live
from semmem.store.views import IndexedView

if TYPE_CHECKING:
    from semmem.memory import Memory


async def item(memory: Memory, partition: str, n: int, caller: Caller) -> Item | None:
    """The live item ``n`` (not expired), if there is one ``caller`` may see."""
    view = await memory.stored_view(partition)
    if isinstance(view, IndexedView):
        found = (await memory.numbered(view, numbers=[n])).items
        got = found[0] if found else None
    else:
        got = view.get(n)  # a snapshot: the whole (small) partition is already in memory
    if got is None or not may_see(caller, got):
        return None
    return got if is_live(got, await memory.retention.max_age(partition)) else None


async def page(memory: Memory, partition: str, after: int, limit: int, caller: Caller
               ) -> tuple[list[Item], int | None]:
    """The live items (not expired) ``caller`` may see among the first ``limit`` numbered
    above ``after``, and the number the next page starts after (``None``: none follows)."""
    view = await memory.stored_view(partition)
    if isinstance(view, IndexedView):
        items = (await memory.numbered(view, after=after, limit=limit + 1)).items
    else:
        items = [it for it in view.items if it.n > after][:limit + 1]
    alive = await memory.liveness(partition)
    scanned = items[:limit]
    following = scanned[-1].n if len(items) > limit else None
    return [it for it in scanned if may_see(caller, it) and alive(it)], following
