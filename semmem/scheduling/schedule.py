"""Background maintenance for a running server: compaction, pruning and purging forgets.

``Maintenance`` is the memory core's write observer: ``Maintainer`` schedules passes per
partition (``maintainer.py``), ``Purger`` adds the follow-up passes that make a dropped text
leave every file (``purges.py``).

Writes report themselves here (``touched``); a partition is maintained once enough writes
piled up (``compact_every``) and, after a forget, as soon as the old versions holding the text
are past the store's retention, so a forgotten text leaves every file within
``version_retention + delay + the maintenance pass`` (documented as the forget window).
The registry (partition names) is maintained under the key ``REGISTRY_DUE`` after a partition is
deleted. A server that stops (SIGTERM, a session's end) before its purges are done hands them
to the store: a purge request in the registry, which every other server follows; a stdio
session's end then runs purge passes for a bounded time, and every start runs its first purge
pass at once, so short sessions alone purge what is past the retention. The
retention sweep (``lifecycle/sweep.py``) runs here too, at start and every
``SEMMEM_RETENTION_SWEEP_S``: what it forgets is purged like any forget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from semmem.scheduling.maintainer import REGISTRY_DUE, Maintainer
from semmem.scheduling.purges import Purger

if TYPE_CHECKING:
    from semmem.store.tables import Store


log = logging.getLogger("semmem.maintenance")  # the name operators filter on
purge_log = logging.getLogger("semmem.web")

FOLLOW_S = 2.0  # how often a server looks for purges other processes asked for
HAND_OFF_S = 5.0  # the most a stopping server waits to hand its pending purges to the store


class Maintenance:
    """The memory core's write observer in a server: maintenance and purges on one loop."""

    def __init__(self, store: Store, delay_s: float, compact_every: int,
                 record_ttl_s: float = 86_400.0, follow_s: float = FOLLOW_S) -> None:
        self.store = store
        self.maintainer = Maintainer(store, delay_s, compact_every)
        self.purger = Purger(self.maintainer, store.version_retention.total_seconds(), delay_s)
        self.maintainer.pruned = self.purger.purge
        # when a file left by a process stopped mid-write is old enough for the orphan sweep
        self.orphan_age_s = store.orphan_age.total_seconds() + store.fence.skew
        self.record_ttl_s = record_ttl_s
        self.follow_s = follow_s
        self._follow: asyncio.Task[None] | None = None
        self._sweep: Callable[[list[str] | None], Awaitable[object]] | None = None
        self.sweep_s = 3600.0
        self._sweeping: asyncio.Task[None] | None = None
        self._soon: dict[str, asyncio.Task[None]] = {}
        self.sweeps = 0  # retention sweeps done
        # At stop, after the hand-off: purge passes run now for this long (a stdio session's
        # end, which no process may follow for a while; 0: a server's stop hands off only).
        self.settle_s = 0.0
        # partitions settled first: those this process dropped values in, and those it serves
        self.settle_first: set[str] = set()

    def sweeping(self, sweep: Callable[[list[str] | None], Awaitable[object]],
                 interval_s: float) -> None:
        """Run ``sweep`` (the retention sweep, of the partitions given or all) once at start
        and every ``interval_s``."""
        self._sweep, self.sweep_s = sweep, interval_s

    def sweep_soon(self, partition: str) -> None:
        """Sweep ``partition`` after the maintenance delay (a read found expired facts in it:
        they are hidden, and each new version costs a filtered copy until they are gone)."""
        if self._sweep is None or partition in self._soon or self._sweeping is None:
            return
        self._soon[partition] = asyncio.create_task(self._sweep_one(partition),
                                                    name="semmem-sweep-soon")

    async def _sweep_one(self, partition: str) -> None:
        assert self._sweep is not None
        try:
            await asyncio.sleep(self.maintainer.delay_s)
            await self._sweep([partition])
        except Exception:
            log.warning("the retention sweep of a partition failed; the next round tries "
                        "again", exc_info=True)
        finally:
            self._soon.pop(partition, None)

    @property
    def passes(self) -> int:
        """Partition passes done."""
        return self.maintainer.passes

    def written(self, partition: str, dropped: bool) -> None:
        """A write was attempted; ``dropped``: it may have dropped a text. Its idempotency
        record (if any) expires a record TTL from now: a pass is due then at the latest."""
        self.purger.written(partition, dropped)
        self.maintainer.due_at(partition, self.record_ttl_s + 1.0)
        if dropped:
            self.settle_first.add(partition)

    def purge_pending(self, partition: str) -> float | None:
        """Seconds until the last pass of ``partition``'s pending purge: its follow-up, else
        its first pass; ``None`` when none is pending."""
        now = time.monotonic()
        follow = self.purger.follow_up_at(partition)
        if follow is not None:
            return round(max(0.0, follow - now), 1)
        due = self.maintainer._due.get(partition)
        if due is not None and due.purge and due.at != float("inf"):
            return round(max(0.0, due.at - now), 1)
        return None

    def partition_deleted(self, partition: str) -> None:
        """Purge a deleted partition's name from the registry now, and its deleted-table entry
        once the registry's maintenance drops it (``GONE_KEEP_MS``)."""
        self.purger.purge(REGISTRY_DUE)
        self.purger.purge_later(REGISTRY_DUE, self.store.gone_keep_s)

    def start(self, partitions: list[str]) -> None:
        """Start the scheduler; purge every partition once (a killed process's schedule is
        lost) and again once the files its last writes may have left are old enough."""
        self.maintainer.start()
        self.purger.sweep(partitions, self.orphan_age_s)
        if self._follow is None and self.follow_s > 0:
            self._follow = asyncio.create_task(self._follow_requests(), name="semmem-follow")
        if self._sweeping is None and self._sweep is not None:
            self._sweeping = asyncio.create_task(self._sweep_now_and_then(), name="semmem-sweep")

    async def _sweep_now_and_then(self) -> None:
        """The retention sweep at start and then every ``sweep_s`` (a failed one is retried
        at the next round: the facts stay hidden from reads meanwhile)."""
        assert self._sweep is not None
        while True:
            try:
                await self._sweep(None)
                self.sweeps += 1
            except Exception:
                log.warning("the retention sweep failed; the next round tries again",
                            exc_info=True)
            await asyncio.sleep(self.sweep_s)

    async def _follow_requests(self) -> None:
        """Purge what other processes without maintenance of their own (the CLI) dropped:
        they leave a request in the registry, which is read when its version moves (a
        listing every ``follow_s``). Requests older than the start are the start-up purge's."""
        seen: dict[str, int] | None = None
        while True:
            try:
                asked = await self.store.purge_requests()
                if seen is not None:
                    for partition, at in asked.items():
                        if seen.get(partition) != at:
                            self.purger.requested(partition, self.orphan_age_s)
                seen = asked
            except Exception:  # the store may be failing now: the next round tries again
                log.warning("could not read the store's purge requests", exc_info=True)
            await asyncio.sleep(self.follow_s)

    async def stop(self) -> None:
        """Cancel follow-ups and the sweep, hand the purges not done yet to the store
        (``hand_off``), stop the scheduler once the pass under way is done, then run purge
        passes for ``settle_s`` (``settle``: a stdio session's end)."""
        pending = self.purger.pending()
        for task in [*self._soon.values(), *([self._sweeping] if self._sweeping else [])]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._soon.clear()
        self._sweeping = None
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow
            self._follow = None
        self.purger.stop()
        # First the hand-off (a host may kill a session soon after its signal), then the pass
        # under way may finish: what a kill cuts short there, the others' later purge sweeps.
        await self.hand_off(sorted(p for p in pending if p is not REGISTRY_DUE))
        await self.maintainer.stop()
        if self.settle_s > 0:
            await self.settle(pending, self.settle_s)

    async def settle(self, pending: set[str | None], seconds: float) -> int:
        """Run a purge pass of each ``pending`` partition now (``settle_first`` first, the
        registry last), starting none after ``seconds``: what is past the retention leaves
        before the process ends, the rest was handed off. Returns the passes done."""
        deadline = time.monotonic() + seconds
        order = sorted((p for p in pending if p is not REGISTRY_DUE),
                       key=lambda p: (p not in self.settle_first, p))
        done = 0
        for partition in [*order, *([REGISTRY_DUE] if REGISTRY_DUE in pending else [])]:
            if time.monotonic() >= deadline:
                log.info("stopping: %d purge pass(es) left to the hand-off",
                         len(pending) - done)
                break
            try:  # a pass is never cut: the bound is checked between passes
                if partition is REGISTRY_DUE:
                    await self.store.maintain_registry()
                else:
                    await self.store.maintain(partition)
                done += 1
            except Exception:  # handed off already: the next start or server purges it
                log.warning("a purge pass at stop failed; it was handed off", exc_info=True)
        return done

    async def hand_off(self, partitions: list[str]) -> None:
        """Leave a purge request for ``partitions`` in the registry (one commit, at most
        ``HAND_OFF_S``): every other server of the store purges them as it purges what the
        CLI dropped, within the forget window; with none running, the next start does."""
        if not partitions:
            return
        try:
            await asyncio.wait_for(self.store.request_purge(*partitions), HAND_OFF_S)
        except TimeoutError:
            log.warning("could not hand %d pending purge(s) to the store in %.0f s; the next "
                        "start purges them", len(partitions), HAND_OFF_S)
            return
        purge_log.info("stopping: %d pending purge(s) handed to the store", len(partitions))
