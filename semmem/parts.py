"""``Memory``'s side of the capabilities' narrow collaborators (``Parts``, this part of
``Memory``): what ``semmem.keyed.ports.Partitions``, ``semmem.stored.ports.Core`` and
``semmem.stored.ports.Holdings`` ask of the core, answered here, so a capability never reaches
into ``memory.store``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from semmem.items import Item
    from semmem.lifecycle.retention import Retention
    from semmem.rules import Alive, Operation
    from semmem.store.rows import Plan
    from semmem.store.tables import Store
    from semmem.store.views import IndexedView, ReadView


class Parts:
    """The capabilities' collaborators of ``Memory``: what they use of it, and the doors."""

    store: Store
    retention: Retention

    _write: Callable[..., Awaitable[dict[str, Any]]]  # ``Writes._write``

    async def latest_view(self, partition: str) -> ReadView:
        """The partition's read view now, the expired still in (policies refreshed first)."""
        await self.retention.refresh()
        return await self.store.read_view(partition)

    async def numbers_where(self, view: IndexedView, where: str) -> list[int]:
        """The numbers of the live rows ``where`` selects in an indexed view, ascending."""
        from semmem.store.reads.filtered import numbers_where  # the engine: loaded here

        return await numbers_where(self.store, view, where)

    async def liveness(self, partition: str) -> Alive:
        """The partition's test of "not expired now"."""
        return self.retention.alive(await self.retention.max_age(partition))

    async def commit(self, partition: str, plan: Plan, op: Operation | None,
                     dropped: bool = False, *, numbers: Iterable[Any] = ()) -> dict[str, Any]:
        """Commit ``plan`` through the write path (``Writes._write``)."""
        return await self._write(partition, plan, op, dropped, numbers=numbers)

    async def listings(self) -> dict[str, dict[str, Any]]:
        """The store's listing records (``semmem.store.system``), by table."""
        return await self.store.records()

    async def every_item(self, partition: str) -> Sequence[Item]:
        """Every row of ``partition`` that is not forgotten, the expired still in."""
        return (await self.store.snapshot(partition)).items

    async def relist(self, partition: str) -> bool:
        """Derive ``partition``'s listing record from its data again and write it; whether
        it was not as derived (``semmem.store.system``)."""
        return await self.store.relist(partition)
