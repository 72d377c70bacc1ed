"""The store's cache of read views: one per partition table, least recently used first out."""

from __future__ import annotations

import threading
from collections import OrderedDict

from semmem.store.views import PartitionSnapshot, ReadView


class ViewCache:
    """Read views by table name, bounded by count and by the items the snapshots hold.
    Snapshots are built (and put here) on worker threads while the loop reads: every change
    and every walk of the views holds one lock."""

    def __init__(self, max_views: int, max_items: int) -> None:
        self.max_views = max_views
        self.max_items = max_items
        self._views: OrderedDict[str, ReadView] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, name: str, version: int) -> ReadView | None:
        """The cached view of ``name`` if it is of ``version``."""
        with self._lock:
            view = self._views.get(name)
            if view is None or view.head.version != version:
                return None
            self._views.move_to_end(name)
            return view

    def latest(self, name: str) -> ReadView | None:
        """The cached view of ``name``, of whatever version."""
        return self._views.get(name)

    def put(self, name: str, view: ReadView) -> None:
        """Cache ``view`` (unless a newer version is cached), evicting the least recently used
        past the count and item bounds."""
        with self._lock:
            held = self._views.get(name)
            if held is not None and held.head.version > view.head.version:
                return
            self._views[name] = view
            self._views.move_to_end(name)
            items = self._items()
            while len(self._views) > 1 and (
                len(self._views) > self.max_views or items > self.max_items
            ):
                _, gone = self._views.popitem(last=False)
                items -= _items(gone)

    def drop(self, name: str) -> None:
        """Forget the view of ``name``."""
        with self._lock:
            self._views.pop(name, None)

    def clear(self) -> None:
        """Forget every view."""
        with self._lock:
            self._views.clear()

    def items(self) -> int:
        """Items held by the cached snapshots."""
        with self._lock:
            return self._items()

    def _items(self) -> int:
        return sum(_items(v) for v in self._views.values())

    def __len__(self) -> int:
        return len(self._views)


def _items(view: ReadView) -> int:
    return len(view.items) if isinstance(view, PartitionSnapshot) else 0
