"""Background maintenance for a running server: compaction, pruning and purging forgets.

``Maintenance`` is the memory core's write observer: ``Maintainer`` schedules passes per
partition, ``Purger`` adds the follow-up passes that make a dropped text leave every file.

Writes report themselves here (``touched``); a partition is maintained once enough writes
piled up (``compact_every``) and, after a forget, as soon as the old versions holding the text
are past the store's retention, so a forgotten text leaves every file within
``version_retention + delay + the maintenance pass`` (documented as the forget window).
The registry (partition names) is maintained under the key ``REGISTRY_DUE`` after a partition is
deleted. A server that stops (SIGTERM, a session's end) before its purges are done hands them
to the store: a purge request in the registry, which every other server follows. The
retention sweep (``lifecycle/sweep.py``) runs here too, at start and every
``SEMMEM_RETENTION_SWEEP_S``: what it forgets is purged like any forget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from semmem.items import now_ms

if TYPE_CHECKING:
    from semmem.store.tables import Store


log = logging.getLogger(__name__)
purge_log = logging.getLogger("semmem.web")

REGISTRY_DUE = None  # the key under which the registry, not a partition, is due
FOLLOW_S = 2.0  # how often a server looks for purges other processes asked for
MAX_BACKOFF_S = 300.0  # a partition whose passes keep failing is retried at least this often
HAND_OFF_S = 5.0  # the most a stopping server waits to hand its pending purges to the store


@dataclass
class _Due:
    at: float
    writes: int = 0
    purge: bool = False
    failures: int = 0  # passes failed in a row
    not_before: float = 0.0  # after a failure, no pass before this (the backoff)


def backoff_s(delay_s: float, failures: int) -> float:
    """How long to wait after ``failures`` failed passes in a row: doubling from the delay
    (at least 1 s), at most ``MAX_BACKOFF_S``."""
    return float(min(max(delay_s, 1.0) * 2 ** min(failures - 1, 30), MAX_BACKOFF_S))


@dataclass
class Maintainer:
    """Schedules ``Store.maintain`` per partition from the write stream."""

    store: Store
    delay_s: float = 2.0
    compact_every: int = 32
    _due: dict[str | None, _Due] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    passes: int = 0  # partition passes done
    registry_passes: int = 0
    _running: dict[str | None, bool] = field(default_factory=dict)  # passes under way: purge?
    pruned: Callable[[str], None] | None = None  # told of a pass that pruned records

    def touched(self, partition: str | None, forgot: bool) -> None:
        """Record a committed write (called by the memory core); ``REGISTRY_DUE``: the registry."""
        due = self._due.setdefault(partition, _Due(at=float("inf")))
        due.writes += 1
        now = time.monotonic()
        if forgot:
            due.purge = True
            purge_at = now + self.store.version_retention.total_seconds() + self.delay_s
            due.at = min(due.at, purge_at)
        if due.writes >= self.compact_every:
            due.at = min(due.at, now + self.delay_s)
        due.at = max(due.at, due.not_before)  # writes do not cut a failing partition's backoff
        self._wake.set()

    def due_at(self, partition: str, seconds: float) -> None:
        """Have ``partition`` maintained in ``seconds`` at the latest (an idempotency record
        expires then: its pass prunes it, and a purge follows)."""
        due = self._due.setdefault(partition, _Due(at=float("inf")))
        due.at = max(min(due.at, time.monotonic() + max(seconds, 0.0)), due.not_before)
        self._wake.set()

    def start(self) -> None:
        """Run the scheduler on the current event loop."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="semmem-maintenance")

    async def stop(self) -> None:
        """Stop the scheduler (pending work is left for the next start or `semmem maintain`)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_due(self) -> int:
        """Maintain every partition whose time has come; returns how many were maintained."""
        now = time.monotonic()
        ready = [p for p, d in self._due.items() if d.at <= now]
        for partition in ready:
            due = self._due.pop(partition)
            self._running[partition] = due.purge
            try:
                if partition is REGISTRY_DUE:
                    await self.store.maintain_registry()
                    self.registry_passes += 1
                    log.info("maintained the registry")
                    continue
                report = await self.store.maintain(partition, purge=due.purge)
                self.passes += report is not None
                if report is not None and report.ops_pruned and self.pruned is not None:
                    self.pruned(partition)  # their versions must go too: purge
                if report is not None and report.next_expiry_ms is not None:
                    self.due_at(partition, (report.next_expiry_ms - now_ms()) / 1000 + 0.5)
                log.info("maintained partition table %s in %.3fs",
                         report.partition_table if report else "-",
                         report.seconds if report else 0.0)
            except Exception as exc:  # keep the loop alive; try again later, less often
                self._failed(partition, due, exc)
            finally:
                self._running.pop(partition, None)
        return len(ready)

    def purging(self) -> set[str | None]:
        """The partitions (``REGISTRY_DUE``: the registry) with a purge pass due or under
        way."""
        return {p for p, d in self._due.items() if d.purge} | {
            p for p, purge in self._running.items() if purge}

    def _failed(self, partition: str | None, due: _Due, exc: Exception) -> None:
        """Back off a failed pass: the traceback once, then one line per (growing) interval."""
        due.failures += 1
        wait = backoff_s(self.delay_s, due.failures)
        due.not_before = time.monotonic() + wait
        due.at = due.not_before
        if due.failures == 1:
            log.error("maintenance failed; retrying in %.0f s, less often while it keeps "
                      "failing", wait, exc_info=exc)
        else:
            log.warning("maintenance failed again (%d times in a row: %s); next try in %.0f s",
                        due.failures, type(exc).__name__, wait)
        later = self._due.get(partition)  # writes meanwhile: merge, keeping the backoff
        if later is not None:
            due.writes += later.writes
            due.purge = due.purge or later.purge
        self._due[partition] = due

    def failures(self, partition: str | None) -> int:
        """Passes of ``partition`` failed in a row (0 once one succeeds)."""
        due = self._due.get(partition)
        return 0 if due is None else due.failures

    async def _run(self) -> None:
        while True:
            await self.run_due()
            pending = [d.at for d in self._due.values() if d.at != float("inf")]
            timeout = max(0.05, min(pending) - time.monotonic()) if pending else None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)


class Purger:
    """The forget window: schedules purges on a ``Maintainer`` at once for a write that drops a
    text, and a follow-up ``lag`` seconds later.

    The first pass compacts and removes versions older than the retention; versions committed
    between the forget and that compaction still reference the old data file, so only the
    follow-up removes it. A killed process loses its schedule, so a start purges every
    partition once, and again when a killed write's leftover files are old enough to delete.
    Deleting a partition purges the registry the same way.
    """

    def __init__(self, maintainer: Maintainer, retention_s: float, delay_s: float) -> None:
        self.maintainer = maintainer
        self.retention_s, self.delay_s = retention_s, delay_s
        # The follow-up's pass must start at least a retention after the first pass compacted;
        # the extra max(delay, 1 s) absorbs the first pass waiting behind other partitions.
        self.lag = retention_s + delay_s + max(delay_s, 1.0)
        self._latest: dict[str | None, float] = {}
        self._timers: dict[str | None, asyncio.TimerHandle] = {}
        self._later: asyncio.TimerHandle | None = None

    @property
    def window_s(self) -> float:
        """The forget window: a dropped text is in no file after this plus two passes."""
        return self.lag + self.retention_s + self.delay_s

    def written(self, partition: str, dropped: bool) -> None:
        """Count a write; one that dropped a text also gets its follow-up purge."""
        self.maintainer.touched(partition, dropped)
        if dropped:
            self._follow_up(partition)

    def purge(self, partition: str | None) -> None:
        """Purge ``partition`` as after a forget (an update's old text, a restart's leftovers);
        ``REGISTRY_DUE`` purges the registry."""
        self.maintainer.touched(partition, True)
        self._follow_up(partition)

    def _follow_up(self, partition: str | None) -> None:
        now = time.monotonic()
        self._latest[partition] = now
        if partition not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[partition] = loop.call_later(self.lag, self._fire, partition, now)

    def pending(self) -> set[str | None]:
        """Every partition whose purge is not done yet: a pass due or under way, or its
        follow-up still to come."""
        return self.maintainer.purging() | set(self._timers)

    def follow_up_at(self, partition: str) -> float | None:
        """When (monotonic) ``partition``'s follow-up purge fires, if one is pending."""
        timer = self._timers.get(partition)
        return None if timer is None else float(timer.when())  # the loop's clock: monotonic

    def _fire(self, partition: str | None, scheduled_at: float) -> None:
        del self._timers[partition]
        self.maintainer.touched(partition, True)
        latest = self._latest.get(partition, scheduled_at)
        if latest > scheduled_at:  # dropped again since: that one needs its own follow-up
            loop = asyncio.get_running_loop()
            delay = max(0.0, latest + self.lag - time.monotonic())
            self._timers[partition] = loop.call_later(delay, self._fire, partition, latest)
        else:
            self._latest.pop(partition, None)

    def sweep(self, partitions: list[str], orphan_age_s: float | None = None) -> None:
        """After a start: purge every partition and the registry once (a killed process's
        schedule is lost), and again after ``orphan_age_s`` when the files a killed write may
        have left are old enough to be deleted."""
        for partition in [*partitions, REGISTRY_DUE]:
            self.purge(partition)
        purge_log.info("start-up purge scheduled for %d partition(s)", len(partitions))
        if orphan_age_s is not None:
            loop = asyncio.get_running_loop()
            self._later = loop.call_later(orphan_age_s + self.delay_s, self.sweep, partitions)

    def stop(self) -> None:
        """Cancel pending follow-ups (the next start sweeps again)."""
        for timer in self._timers.values():
            timer.cancel()
        if self._later is not None:
            self._later.cancel()
            self._later = None
        self._timers.clear()
        self._latest.clear()


class Maintenance:
    """The memory core's write observer in a server: maintenance and purges on one loop."""

    def __init__(self, store: Store, delay_s: float, compact_every: int,
                 record_ttl_s: float = 86_400.0, follow_s: float = FOLLOW_S) -> None:
        self.store = store
        self.maintainer = Maintainer(store, delay_s, compact_every)
        self.purger = Purger(self.maintainer, store.version_retention.total_seconds(), delay_s)
        self.maintainer.pruned = self.purger.purge
        self.orphan_age_s = store.orphan_age.total_seconds()
        self.record_ttl_s = record_ttl_s
        self.follow_s = follow_s
        self._follow: asyncio.Task[None] | None = None
        self._sweep: Callable[[list[str] | None], Awaitable[object]] | None = None
        self.sweep_s = 3600.0
        self._sweeping: asyncio.Task[None] | None = None
        self._soon: dict[str, asyncio.Task[None]] = {}
        self.sweeps = 0  # retention sweeps done

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
        """Purge a deleted partition's name from the registry."""
        self.purger.purge(REGISTRY_DUE)

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
                            self.purger.purge(partition)
                seen = asked
            except Exception:  # the store may be failing now: the next round tries again
                log.warning("could not read the store's purge requests", exc_info=True)
            await asyncio.sleep(self.follow_s)

    async def stop(self) -> None:
        """Cancel follow-ups and the sweep, stop the scheduler, and hand the purges not done
        yet to the store (``hand_off``)."""
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
        await self.maintainer.stop()
        await self.hand_off(sorted(p for p in pending if p is not REGISTRY_DUE))

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
