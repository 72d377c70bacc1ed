"""Which numbers hold each address, per snapshot: built once (``ItemSet.cached``) and carried
forward with the snapshot by each commit's changed rows (``evolve``, as ``store/reads/evolve.py``
asks of a derived structure), so a lookup by key costs a dictionary read however large the
partition. Past the index threshold the same question goes to the ``tags`` index instead
(``semmem.keyed.items``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from semmem.items.address import Address, address_of
from semmem.store.reads.persistent import Layered
from semmem.store.views import ItemSet

NAME = "keyed:addresses"  # where a snapshot keeps it (``ItemSet.derived``)


@dataclass(frozen=True)
class Addresses:
    """Address → the ascending numbers of its live pieces, in one snapshot."""

    numbers: Mapping[Address, tuple[int, ...]]

    @classmethod
    def of(cls, items: ItemSet) -> Addresses:
        """The addresses of ``items``."""
        held: dict[Address, list[int]] = defaultdict(list)
        for it in items.items:
            address = address_of(it)
            if address is not None:
                held[address].append(it.n)
        return cls({a: tuple(sorted(ns)) for a, ns in held.items()})

    def get(self, address: Address) -> tuple[int, ...]:
        """The numbers of ``address``'s live pieces, ascending (none: no such item)."""
        return self.numbers.get(address, ())

    def in_space(self, space: str) -> list[Address]:
        """Every address of ``space``, sorted."""
        return sorted(a for a, ns in self.numbers.items() if a.space == space and ns)

    def evolve(self, old: ItemSet, new: ItemSet, appended: range, changed: list[int],
               removed: list[int]) -> Addresses:
        """These addresses for ``new``: ``old`` with rows ``removed`` (old rows) cut, rows
        ``changed`` (new rows) replaced and rows ``appended``; only the addresses the change
        touches are copied (a commit's cost, not the partition's)."""
        cut: dict[Address, set[int]] = defaultdict(set)
        put: dict[Address, set[int]] = defaultdict(set)
        for row in removed:
            it = old.items[row]
            address = address_of(it)
            if address is not None:
                cut[address].add(it.n)
        for row in changed:
            it = new.items[row]
            before = old.get(it.n)
            was = address_of(before) if before is not None else None
            now = address_of(it)
            if was == now:
                continue
            if was is not None:
                cut[was].add(it.n)
            if now is not None:
                put[now].add(it.n)
        for row in appended:
            it = new.items[row]
            address = address_of(it)
            if address is not None:
                put[address].add(it.n)
        if not cut and not put:
            return self
        touched = {}  # an address left without pieces keeps an empty entry
        for address in cut.keys() | put.keys():
            held = (set(self.numbers.get(address, ())) - cut.get(address, set())) \
                | put.get(address, set())
            touched[address] = tuple(sorted(held))
        return Addresses(Layered.over(self.numbers, touched))


def addresses(view: ItemSet) -> Addresses:
    """The addresses of a snapshot (built once, then carried forward)."""
    return view.cached(NAME, Addresses.of)
