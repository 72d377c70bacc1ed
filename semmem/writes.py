"""``Memory``'s write path (``Writes``, this part of ``Memory``): a plan committed through the
store, and what it dropped reported for purging; and what the capabilities' narrow
collaborators (``keyed.ports``, ``stored.ports``, ``conversations.host``) ask of it.

A write drops a value when it replaces a live item's row without keeping one of its values:
a forget's text, an update's old text, a replaced metadata object (and so its tags), a cleared
note or status, a changed expiry. The old row stays in older data files, their versions and
the indexes built on them until a purge, so every such write is purged alike, whatever
surface made it (``drops``); an edit that only adds fields keeps every old value live and
needs none.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from semmem import rules
from semmem.conversations import forgotten
from semmem.conversations.ledgers import from_registry
from semmem.store.rows import ItemRow, Lookup, Mutation, Plan
from semmem.store.views import IndexedView, ReadView, WriteView

if TYPE_CHECKING:
    from semmem.embedding.queue import ModelQueue
    from semmem.items import Item, Vectors
    from semmem.lifecycle.retention import Retention
    from semmem.rules import Alive, Operation
    from semmem.scheduling.observing import WriteObserver
    from semmem.store.tables import Store


_LOOKUPS = 3  # a write's lookups: its own, then hinted rows and ledgers it found it needs


def drops(old: Item | None, row: ItemRow) -> bool:
    """Whether writing ``row`` over the live item ``old`` leaves one of its values behind in
    older files only: its text, or a record field removed or changed."""
    if old is None:
        return False
    if row.text != old.text:
        return True
    return any(key not in row.attrs or row.attrs[key] != value
               for key, value in old.attrs.items())


def dropping(view: WriteView, decision: Mutation) -> bool:
    """Whether a write decided on ``view`` drops a value of one of the items it rewrites."""
    return any(drops(view.get(row.n), row) for row in decision.items)


class Writes:
    """The write path of ``Memory``: what it uses of it, and ``_write``."""

    store: Store
    observer: WriteObserver | None
    retention: Retention
    model: ModelQueue

    @property
    def secret(self) -> bytes:
        """The store's secret (keys digests and operation fingerprints)."""
        return self.store.secret

    async def digest_keys(self, ids: Collection[str]) -> dict[str, bytes]:
        """Other stores' secrets known to this store, by key id (an import's ledgers:
        ``conversations.ledgers``): its registry is read again when one of ``ids`` is not
        known here yet (an import through another process)."""
        if not self.store.digest_keys_read or not set(ids) <= self.store.digest_keys.keys():
            self.store.digest_keys.update(from_registry(await self.store.conn.registry.rows()))
            self.store.digest_keys_read = True
        return dict(self.store.digest_keys)

    async def embed_passages(self, texts: list[str], *, caller: str = "") -> Vectors:
        """Vectors of stored texts, in one call on the model thread, its time charged to
        ``caller`` (a partition: ``embedding/queue.py``'s lanes)."""
        return await self.model.embed(texts, caller=caller)

    async def commit(self, partition: str, plan: Plan, op: Operation | None,
                     dropped: bool = False, *, numbers: Iterable[Any] = (),
                     records: Iterable[str] = ()) -> dict[str, Any]:
        """Commit ``plan`` through the write path (``_write``): what the capabilities' narrow
        collaborators (``keyed.ports.Partitions``, ``conversations.host.Host``) are handed."""
        return await self._write(partition, plan, op, dropped, numbers=numbers,
                                 records=records)

    async def latest_view(self, partition: str) -> ReadView:
        """The partition's read view now, the expired still in (policies refreshed first):
        what a capability looks up before it writes."""
        await self.retention.refresh()
        return await self.store.read_view(partition)

    async def numbers_where(self, view: IndexedView, where: str) -> list[int]:
        """The numbers of the live rows ``where`` selects in an indexed view, ascending."""
        from semmem.store.reads.filtered import numbers_where  # the engine: loaded here

        return await numbers_where(self.store, view, where)

    async def liveness(self, partition: str) -> Alive:
        """The partition's test of "not expired now"."""
        return self.retention.alive(await self.retention.max_age(partition))

    async def listings(self) -> dict[str, dict[str, Any]]:
        """The store's listing records (``semmem.store.system``), by table."""
        return await self.store.records()

    async def every_item(self, partition: str) -> Sequence[Item]:
        """Every row of ``partition`` that is not forgotten, the expired still in."""
        return (await self.store.snapshot(partition)).items

    async def every_row(self, partition: str) -> tuple[Sequence[Item], Any]:
        """``every_item`` and their vectors (row ``i`` is item ``i``'s)."""
        snap = await self.store.snapshot(partition)
        return snap.items, snap.vectors

    async def relist(self, partition: str) -> bool:
        """Derive ``partition``'s listing record from its data again and write it; whether
        it was not as derived (``semmem.store.system``)."""
        return await self.store.relist(partition)

    async def _write(
        self, partition: str, plan: Plan, op: Operation | None,
        dropped: bool = False, *, numbers: Iterable[Any] = (), texts: list[str] | None = None,
        records: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Commit ``plan`` and report the write to the observer, purging what it dropped.

        ``dropped``: a replay of this write (decided by an earlier attempt, perhaps in a
        process that stopped before scheduling its purge) may stand for one that dropped a
        value: a forget or an update purges even then. A write decided here is purged when it
        ``drops`` a value. ``records``: record rows the plan reads besides its operation's.
        Every decision passes ``forgotten.kept``: a piece of a session it forgets is named in
        the session's ledger, so no re-send brings it back."""
        await self.retention.refresh()
        self.store.current()  # a process that found the store changed writes no more
        lookup = Lookup(ops=[*([op.key] if op is not None else []), *records],
                        numbers=rules.as_numbers(list(numbers)), texts=texts or [])
        attempted = lost = False

        def planned(view: WriteView) -> Mutation | dict[str, Any]:
            nonlocal attempted, lost
            decision = plan(view)
            if isinstance(decision, Mutation):
                decision = forgotten.kept(view, decision, self.store.secret, lookup.ops)
                attempted = True
                lost = lost or dropping(view, decision)
            return decision

        try:
            for again in range(_LOOKUPS):
                try:
                    return await self.store.write(partition, planned, lookup=lookup,
                                                  deadline_ms=op.deadline_ms if op else None)
                except rules.MissingRows as missing:  # a replay's hints: read them, decide again
                    if again == _LOOKUPS - 1:
                        raise
                    lookup = Lookup(ops=lookup.ops,
                                    numbers=[*lookup.numbers, *missing.numbers],
                                    texts=lookup.texts)
                except rules.MissingRecords as missing:  # a ledger to grow: read it too
                    if again == _LOOKUPS - 1:
                        raise
                    lookup = Lookup(ops=[*lookup.ops, *missing.keys], numbers=lookup.numbers,
                                    texts=lookup.texts)
            raise AssertionError("unreachable")
        finally:
            # Any attempted commit may have landed (even one that reported an error): one
            # that dropped a value, or a replay or refusal of a write that may drop one,
            # schedules its purge.
            purge = lost or (dropped and not attempted)
            if self.observer is not None and (attempted or purge):
                self.observer.written(partition, purge)
            elif self.observer is None and attempted and lost:  # the servers purge it
                await self.store.request_purge(partition)
