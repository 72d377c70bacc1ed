"""System records: what the store keeps about a partition for the core's own doors, as rows
of the registry table keyed ``<kind>:<table>`` (``registry.PER_TABLE``): its name (``t``), its
retention override (``r``) and its listing (``s``, here). Never items of a partition, so no
door of partitions reaches them: not listed (``Store.partitions`` reads names), not deleted
as one, not expired by retention nor counted by a quota (both are about items); they go with
their partition (``Registry.remove_table``, its files purged by the registry pass).

A listing record says that a partition holds keyed items of ``LISTED_SPACE`` (the
application's store items) and when the last of them may expire at the latest
(``{"partition", "until"}``: epoch ms, ``None`` for never). It is derived from the data, in
one place, the write path (``SystemRecords.written``: every door's write passes it): a write
adding such pieces makes the record (or moves ``until`` on), a write only removing some
derives it again from the partition (dropped when none is left); an import, a restore and
``semmem check --repair`` derive it again (``relist``). ``until`` is an upper bound (an
expired item stays until swept): a reader checks what it answers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from semmem.errors import Unavailable
from semmem.items import EXPIRES, Item, now_ms, parse_iso
from semmem.items.address import KEYED, space_tag
from semmem.store.rows import Mutation, table_name
from semmem.store.views import IndexedView, WriteView

if TYPE_CHECKING:
    from semmem.store.connection import Connection
    from semmem.store.views import Candidates, ReadView

log = logging.getLogger("semmem.store")

LISTED_SPACE = "store"
FOREVER = -1  # ``until`` of a write adding a piece without an expiry


def _space(attrs: dict[str, Any]) -> str | None:
    keyed = attrs.get(KEYED)
    return keyed.get("space") if isinstance(keyed, dict) else None


def _expiry(attrs: dict[str, Any]) -> int:
    """A piece's expiry (epoch ms), ``FOREVER`` without one."""
    at = attrs.get(EXPIRES)
    try:
        return parse_iso(at) if isinstance(at, str) else FOREVER
    except ValueError:
        return FOREVER


def _latest(expiries: Sequence[int]) -> int | None:
    """The latest of ``expiries`` (``None``: one never expires, or there are none)."""
    return None if not expiries or FOREVER in expiries else max(expiries)


class Touch:
    """What one write does to the listed space: pieces added (their latest expiry), pieces
    removed."""

    def __init__(self, view: WriteView, decision: Mutation) -> None:
        added: list[int] = []
        self.removed = False
        for row in decision.items:
            old = view.get(row.n)
            if old is not None and _space(old.attrs) == LISTED_SPACE \
                    and (row.forgotten or _space(row.attrs) != LISTED_SPACE):
                self.removed = True
            if not row.forgotten and _space(row.attrs) == LISTED_SPACE:
                added.append(_expiry(row.attrs))
        self.added = bool(added)
        self.until = _latest(added)

    def __bool__(self) -> bool:
        return self.added or self.removed


class SystemRecords:
    """The system records' doors of ``Store``: what they use of it, and the doors."""

    conn: Connection
    read_view: Callable[[str], Awaitable[ReadView]]
    numbered: Callable[..., Awaitable[Candidates]]

    async def records(self) -> dict[str, dict[str, Any]]:
        """Every listing record (``{"partition", "until"}``), by table."""
        return await self.conn.registry.listed()

    async def drop_record(self, partition: str) -> None:
        """Remove ``partition``'s listing record (``relist`` derives it again)."""
        await self.conn.registry.drop_listed(table_name(partition))

    async def written(self, partition: str, touch: Touch) -> None:
        """Keep ``partition``'s listing record true after a committed write that ``touch``
        describes (the write path calls this).

        Raises:
            Unavailable: the record of pieces just added could not be written (the write
                landed: a retry of it records them); a record left behind by a removal is
                only logged (a reader checks what it answers).
        """
        try:
            await self._written(partition, touch)
        except Exception as exc:  # the engine's errors are not a typed tree
            if touch.added:
                raise Unavailable(f"the write landed but its listing was not recorded: {exc}"
                                  ) from exc
            log.warning("could not update the listing record of %s", table_name(partition),
                        exc_info=True)

    async def _written(self, partition: str, touch: Touch) -> None:
        if not touch.added:  # only removed: is any left?
            await self.relist(partition)
            return
        held = (await self.records()).get(table_name(partition))
        if held is not None and (held["until"] is None
                                 or (touch.until is not None and touch.until <= held["until"])):
            return  # it covers these pieces already: no registry write
        until = touch.until
        if until is not None:  # twice as far ahead: items of one TTL rewrite it seldom
            until = until + max(0, until - now_ms())
        await self.conn.registry.set_listed(table_name(partition),
                                            {"partition": partition, "until": until})

    async def relist(self, partition: str, *, repair: bool = True) -> bool:
        """Derive ``partition``'s listing record from its data again (``repair``: and write
        it); whether it was not as derived. A record whose ``until`` covers the derived one
        is true enough (``written`` sets it further ahead)."""
        pieces = await self._listed_pieces(partition)
        name = table_name(partition)
        held = (await self.records()).get(name)
        if not pieces:
            if held is None or not repair:
                return held is not None
            await self.conn.registry.drop_listed(name)
            # a write adding pieces after the read above may have found the record still
            # there (and written none): look again, now that it is gone
            pieces = await self._listed_pieces(partition)
            if not pieces:
                return True
        until = _latest([_expiry(it.attrs) for it in pieces])
        if held is not None and held.get("partition") == partition and (
                held.get("until") is None if until is None
                else held.get("until") is None or held["until"] >= until):
            return False
        if repair:
            await self.conn.registry.set_listed(name, {"partition": partition, "until": until})
        return True

    async def _listed_pieces(self, partition: str) -> list[Item]:
        """The partition's pieces of the listed space (the expired still in)."""
        view = await self.read_view(partition)
        if isinstance(view, IndexedView):
            from semmem.store.reads.filtered import numbers_where

            where = f"array_has_all(tags, ['{space_tag(LISTED_SPACE)}'])"
            numbers = await numbers_where(self, view, where)  # type: ignore[arg-type]
            return list((await self.numbered(view, numbers=numbers)).items) if numbers else []
        return [it for it in view.items if _space(it.attrs) == LISTED_SPACE]


def touched(decisions: list[Touch], view: WriteView, decision: Any) -> Any:
    """Note what ``decision`` (a plan's, on ``view``) does to the listed space, as the last of
    ``decisions`` (a plan runs again after a lost race), and hand it back."""
    if isinstance(decision, Mutation):
        decisions[:] = [Touch(view, decision)]
    return decision


__all__ = ["LISTED_SPACE", "SystemRecords", "Touch", "touched"]
