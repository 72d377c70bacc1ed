"""Keyed items over a memory: read, write and forget an item by its address.

A keyed item is the set of live numbered items ("pieces") whose ``keyed`` record field holds
its address. Lookups go through an index at any partition size: a snapshot's ``Addresses``
(a dictionary carried forward by each commit) below the index threshold, the ``tags``
``LABEL_LIST`` index above it. A write decides on the rows it looked up plus every number
assigned since its lookup (a piece of the same item can only be new: an address is never
changed by an edit), so two writers of one item never both add what only one may.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem import rules
from semmem.errors import Unavailable
from semmem.items import Item, now_ms
from semmem.items.address import KEYED, Address, address_of, space_tag
from semmem.keyed.index import addresses
from semmem.rules import Decision, Operation
from semmem.store.rows import NEW, ItemRow
from semmem.store.views import IndexedView, ReadView, WriteView
from semmem.targets import tombstone

if TYPE_CHECKING:
    from semmem.keyed.ports import Partitions

ATTEMPTS = 8  # lookups made again when other writers keep moving the partition on
LOOK_AHEAD = 4096  # numbers assigned since a lookup that a write looks up, not reads again
CHUNK = 256  # pieces forgotten per commit

# One piece of a body ``put`` writes: its text, its vector and its record fields.
Body = tuple[str, np.ndarray, dict[str, Any]]
# Decides a write of a keyed item on the write view, given the item's pieces in it (live
# rows, number order, expired ones included: the decider knows its retention).
Decide = Callable[[WriteView, list[Item]], Decision]


class Moved(Exception):
    """The partition moved on too far since a keyed write's lookup: look up again."""


@dataclass(frozen=True)
class Held:
    """What a lookup found of one address: the pieces' numbers, and the highest number
    assigned when it looked."""

    address: Address
    numbers: tuple[int, ...]
    hwm: int
    view: ReadView


class Keyed:
    """Keyed items of a memory: ``held``/``pieces`` read, ``write`` decides, ``forget``
    removes through the forget path."""

    def __init__(self, core: Partitions) -> None:
        self.core = core

    async def _view(self, partition: str) -> ReadView:
        return await self.core.latest_view(partition)

    async def held(self, partition: str, address: Address) -> Held:
        """The numbers of ``address``'s live pieces now (expired ones included)."""
        view = await self._view(partition)
        return Held(address, tuple(await self._numbers(view, address.where(), address)),
                    view.hwm, view)

    async def _numbers(self, view: ReadView, where: str, address: Address | None
                       ) -> list[int]:
        if isinstance(view, IndexedView):
            return await self.core.numbers_where(view, where)
        if address is not None:
            return list(addresses(view).get(address))
        return []

    async def numbers(self, view: ReadView, address: Address) -> list[int]:
        """The numbers of ``address``'s live pieces in ``view`` (expired ones included)."""
        return await self._numbers(view, address.where(), address)

    async def pieces(self, partition: str, address: Address) -> list[Item]:
        """``address``'s live pieces (none expired), in number order (empty: no such item)."""
        held = await self.held(partition, address)
        return await self._live(held.view, list(held.numbers))

    async def items(self, held: Held) -> list[Item]:
        """The pieces ``held`` found, as items in number order (expired ones included)."""
        return await self._items(held.view, list(held.numbers))

    async def _items(self, view: ReadView, numbers: list[int]) -> list[Item]:
        if isinstance(view, IndexedView):
            return list((await self.core.numbered(view, numbers=numbers)).items)
        return [it for n in numbers if (it := view.get(n)) is not None]

    async def _live(self, view: ReadView, numbers: list[int]) -> list[Item]:
        items = await self._items(view, numbers)
        alive = await self.core.liveness(view.partition)
        return [it for it in items if alive(it)]

    async def keys(self, partition: str, space: str) -> dict[Address, list[Item]]:
        """Every item of ``space`` with its live pieces (number order), by address: an
        owner's listing (it reads every piece of the space)."""
        view = await self._view(partition)
        if isinstance(view, IndexedView):
            where = f"array_has_all(tags, ['{space_tag(space)}'])"
            items = await self._live(view, await self._numbers(view, where, None))
        else:
            index = addresses(view)
            items = await self._live(view, sorted(
                n for a in index.in_space(space) for n in index.get(a)))
        out: dict[Address, list[Item]] = {}
        for it in items:
            address = address_of(it)
            if address is not None:
                out.setdefault(address, []).append(it)
        return out

    async def commit(self, partition: str, held: Held, decide: Decide,
                     op: Operation | None = None, *, dropped: bool = False,
                     records: Sequence[str] = ()) -> dict[str, Any]:
        """Commit what ``decide`` makes of ``held``'s item at the latest version: its
        pieces are those ``held`` found plus any numbered since (looked up with the write),
        and ``records`` are looked up too. A replay of ``op`` answers its record first.

        Raises:
            Moved: too many numbers were assigned since the lookup (look up again).
            Whatever ``decide`` raises.
        """
        address, since = held.address, held.hwm

        def plan(view: WriteView) -> Decision:
            replayed = rules.replay(view, op)
            if replayed is not None:
                return replayed
            if view.hwm - since > LOOK_AHEAD:
                raise Moved(f"{view.hwm - since} numbers assigned since the lookup")
            missing = [n for n in range(since + 1, view.hwm + 1)
                       if view.get(n) is None and n not in view.tombstones]
            if missing:
                raise rules.MissingRows(missing)
            return decide(view, [it for it in view.items if address_of(it) == address])

        return await self.core.commit(partition, plan, op, dropped, numbers=held.numbers,
                                      records=records)

    async def write(self, partition: str, address: Address, decide: Decide,
                    op: Operation | None = None, *, dropped: bool = False) -> dict[str, Any]:
        """Look ``address`` up and ``commit`` ``decide``'s write, again while the partition
        keeps moving on under it.

        Raises:
            Unavailable: other writers kept moving the partition on (retry later).
        """
        for _ in range(ATTEMPTS):
            held = await self.held(partition, address)
            try:
                return await self.commit(partition, held, decide, op, dropped=dropped)
            except (Moved, rules.MissingRows):
                continue
        raise Unavailable("the partition kept changing under this write; retry it")

    async def put(self, partition: str, address: Address, bodies: Sequence[Body],
                  op: Operation | None = None, *, ts: int | None = None) -> dict[str, Any]:
        """Replace ``address``'s pieces by ``bodies`` (text, vector, record fields) in one
        write: new numbers for the new pieces, in order, and the old ones forgotten
        (tombstones; their texts purged within the forget window). ``ts``: the pieces' time
        (default now).

        Returns:
            ``{"status": "stored", "items": [n, …], "replaced": [n, …], "count"}``.
        """
        ttl = self.core.idempotency_ttl_ms
        held: Held | None = None

        def decide(view: WriteView, pieces: list[Item]) -> Decision:
            if pieces and held is not None and not held.numbers:
                raise Moved("pieces appeared since the lookup")  # so the write purges them
            now = now_ms()
            rows = [tombstone(it, now) for it in pieces]
            n, numbers = view.hwm, []
            for text, vector, attrs in bodies:
                n += 1
                rows.append(ItemRow(n, text, vector, now if ts is None else ts, now, 1,
                                    attrs={**attrs, KEYED: address.public()}, created=NEW))
                numbers.append(n)
            result = {"status": "stored", "items": numbers, "replaced": [it.n for it in pieces],
                      "count": view.count - len(pieces) + len(bodies)}
            return rules.mutation(op, result, ttl, rows, n if bodies else None)

        for _ in range(ATTEMPTS):
            held = await self.held(partition, address)
            try:  # a body replaced drops texts: purged like a forget's
                return await self.commit(partition, held, decide, op,
                                         dropped=bool(held.numbers))
            except (Moved, rules.MissingRows):
                continue
        raise Unavailable("the partition kept changing under this write; retry it")

    async def forget(self, partition: str, address: Address,
                     keep: Callable[[Item], bool] = lambda item: False) -> list[int]:
        """Forget every live piece of ``address`` (but those ``keep`` keeps) through the forget
        path, in commits of ``CHUNK``: gone from reads now, from every file within the forget
        window. Pieces added while it runs are forgotten too. Returns the numbers forgotten."""
        gone: list[int] = []
        tried: set[int] = set()
        for _ in range(ATTEMPTS):
            held = await self.held(partition, address)
            numbers = [n for n in held.numbers if n not in tried]
            if not numbers:
                break
            tried.update(numbers)
            for chunk in _chunks(numbers, CHUNK):
                plan = rules.expire(chunk, lambda it: address_of(it) != address or keep(it))
                result = await self.core.commit(partition, plan, None, True, numbers=chunk)
                gone.extend(result["expired"])
        return gone


def _chunks(values: Sequence[int], size: int) -> list[list[int]]:
    return [list(values[i:i + size]) for i in range(0, len(values), size)]
