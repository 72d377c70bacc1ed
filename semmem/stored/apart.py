"""The format gate's step from format 3 (``semmem/store/formats.py``): every store item an
earlier release kept among the model's facts, moved to the application's store
(``semmem.store.apart``), through the cores' doors (``ports.Apart``).

For each partition of the model's store whose head counts items that are not the model's
(``Head.application``; a partition of facts alone is not read), its store items' pieces
(space ``store``: texts, vectors, record fields, times, expiries as they are, the expired
too) are put in the application's partition of the same name, each item only if its key is
absent there: decided inside the compare-and-swap commit on the application's partition (a
lookup of the keys, and every number assigned since it), so of two processes moving it at
once one puts it, and a key the application wrote since (through this release) keeps its
newer value. Then the pieces are forgotten from the model's partition through the write path
(a purge takes them off every file within the forget window). A rerun after a crash finds
put what was put and forgets the rest; the model's numbers of those pieces stay issued (never
reused), the application's items get numbers of the application's store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from semmem import rules
from semmem.errors import Unavailable
from semmem.items import Item
from semmem.items.address import Address, address_of
from semmem.keyed.items import ATTEMPTS, Held, Keyed, Moved
from semmem.rules import Decision
from semmem.store.rows import NEW, ItemRow
from semmem.store.views import WriteView
from semmem.stored.ports import Apart, Holdings

Hook = Callable[[str, str], Awaitable[None]]
SPACE = "store"
CHUNK = 256  # items per write


def _store_pieces(items: Any) -> dict[Address, list[int]]:
    """The rows (indexes) of each store item's pieces, by address, in number order."""
    found: dict[Address, list[int]] = {}
    for i, it in enumerate(items):
        address = address_of(it)
        if address is not None and address.space == SPACE:
            found.setdefault(address, []).append(i)
    return found


async def items_apart(core: Apart, hook: Hook | None = None) -> int:
    """Move every store item of ``core``'s store to the application's; how many were put
    there (those found there already are only forgotten here)."""
    application = await core.application()
    moved = 0
    for partition in await core.partitions():
        if (await core.latest_view(partition)).head.application == 0:
            continue  # its head counts no item that is not the model's: nothing to read
        items, vectors = await core.every_row(partition)
        found = _store_pieces(items)
        if not found:
            continue
        addresses = list(found)
        for start in range(0, len(addresses), CHUNK):
            chunk = {a: [(items[i], vectors[i]) for i in found[a]]
                     for a in addresses[start:start + CHUNK]}
            moved += await _put_absent(application, partition, chunk)
        if hook is not None:
            await hook("moved", partition)
        numbers = sorted(items[i].n for rows in found.values() for i in rows)
        for start in range(0, len(numbers), CHUNK):
            chunk_n = numbers[start:start + CHUNK]
            plan = rules.expire(chunk_n, lambda it: (a := address_of(it)) is None
                                or a.space != SPACE)
            await core.commit(partition, plan, None, True, numbers=chunk_n)
        if hook is not None:
            await hook("forgotten", partition)
    return moved


async def _put_absent(application: Holdings, partition: str,
                      pieces: dict[Address, list[tuple[Item, Any]]]) -> int:
    """Put each item of ``pieces`` in the application's ``partition`` unless its key is there;
    how many were put."""
    keyed = Keyed(application)

    def decide(view: WriteView, _: list[Item]) -> Decision:
        there = {address_of(it) for it in view.items}  # looked up, and every one since
        n, rows, put = view.hwm, [], 0
        for address, held in pieces.items():
            if address in there:
                continue  # moved before (a rerun, another process) or written anew since
            put += 1
            for it, vector in held:
                n += 1
                rows.append(ItemRow(n, it.text, vector, it.ts, it.updated, it.revision,
                                    attrs=dict(it.attrs), created=NEW))
        return rules.mutation(None, {"put": put}, 0, rows, n) if rows else {"put": 0}

    for _ in range(ATTEMPTS):
        view = await application.latest_view(partition)
        numbers = [n for a in pieces for n in await keyed.numbers(view, a)]
        held = Held(next(iter(pieces)), tuple(sorted(numbers)), view.hwm, view)
        try:
            result = await keyed.commit(partition, held, decide)
        except (Moved, rules.MissingRows):
            continue
        return int(result["put"])
    raise Unavailable("the application's partition kept changing under the upgrade; retry")
