"""Inspection: a partition's last change, as owners see it (expired facts left out, as every
read leaves them out); its counters are ``semmem.lifecycle.stats``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from semmem.store.views import IndexedView

if TYPE_CHECKING:
    from semmem.lifecycle.retention import Retention
    from semmem.store.views import ReadView


async def last_update(view: ReadView, retention: Retention) -> int | None:
    """When the partition last changed (its newest item or tombstone), if ever: ``view`` is its
    read view without the expired (``Memory.read_view``)."""
    if isinstance(view, IndexedView):
        items = (await retention.recent(view, 1)).items
        return max((it.updated for it in items), default=None)
    return view.last_update
