"""What keyed items need of the memory core, and nothing more: a partition's latest view and
its rows by number or by filter, the partition's test of "not expired now", and a write
committed through the write path. ``Memory`` is one (``semmem.writes``); so is anything else
that offers these (a test's, a tool's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from semmem.rules import Alive, Operation
    from semmem.store.rows import Plan
    from semmem.store.views import Candidates, IndexedView, ReadView


class Partitions(Protocol):
    """Read a partition's view, find numbers in it, commit a write to it."""

    @property
    def idempotency_ttl_ms(self) -> int:
        """How long a write's idempotency record is kept."""
        ...

    async def latest_view(self, partition: str) -> ReadView:
        """The partition's read view now (the expired still in; policies refreshed first)."""
        ...

    async def numbers_where(self, view: IndexedView, where: str) -> list[int]:
        """The numbers of the live rows ``where`` selects in an indexed view, ascending."""
        ...

    async def numbered(self, view: IndexedView, *, numbers: list[int] | None = None,
                       after: int = 0, limit: int = 100) -> Candidates:
        """Rows of an indexed view by number (the expired still in)."""
        ...

    async def liveness(self, partition: str) -> Alive:
        """The partition's test of "not expired now"."""
        ...

    async def commit(self, partition: str, plan: Plan, op: Operation | None,
                     dropped: bool = False, *, numbers: Iterable[Any] = (),
                     records: Iterable[str] = ()) -> dict[str, Any]:
        """Commit ``plan`` through the write path (purging what it drops)."""
        ...
