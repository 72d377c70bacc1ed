"""When a partition's pass runs: ``Maintainer`` schedules ``Store.maintain`` per partition
from the write stream, backing off a partition whose passes keep failing."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from semmem.items import now_ms
from semmem.store.rows import table_name

if TYPE_CHECKING:
    from semmem.store.tables import Store


log = logging.getLogger("semmem.maintenance")  # the name operators filter on

REGISTRY_DUE = None  # the key under which the registry, not a partition, is due
MAX_BACKOFF_S = 300.0  # a partition whose passes keep failing is retried at least this often
FINISH_S = 10.0  # the most a stop waits for the pass under way


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
    _stopping: bool = False
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

    def purge_soon(self, partition: str | None) -> None:
        """Have ``partition`` purged after the delay, without waiting out a retention: what
        older versions hold that are past it already (a start's) leaves in this one pass."""
        due = self._due.setdefault(partition, _Due(at=float("inf")))
        due.purge = True
        due.at = max(min(due.at, time.monotonic() + self.delay_s), due.not_before)
        self._wake.set()

    def due_at(self, partition: str, seconds: float) -> None:
        """Have ``partition`` maintained in ``seconds`` at the latest (an idempotency record
        expires then: its pass prunes it, and a purge follows)."""
        due = self._due.setdefault(partition, _Due(at=float("inf")))
        due.at = max(min(due.at, time.monotonic() + max(seconds, 0.0)), due.not_before)
        self._wake.set()

    def start(self) -> None:
        """Run the scheduler on the current event loop."""
        self._stopping = False
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="semmem-maintenance")

    async def stop(self, finish_s: float = FINISH_S) -> None:
        """Stop the scheduler; a pass under way finishes first, for at most ``finish_s``
        (pending work is left for the next start or `semmem maintain`).

        A pass runs in a thread, which cancelling does not stop; a server's exit once shut
        down (uvicorn re-raises the signal) would cut it mid-write, leaving files only the
        orphan sweep removes and versions holding a forgotten text."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), finish_s)
        except TimeoutError:
            log.warning("a maintenance pass was still running %.0f s into the stop; "
                        "stopping without it", finish_s)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._task = None

    async def run_due(self) -> int:
        """Maintain every partition whose time has come; returns how many were maintained."""
        now = time.monotonic()
        ready = [p for p, d in self._due.items() if d.at <= now]
        for partition in ready:
            if self._stopping:
                break
            due = self._due.pop(partition)
            self._running[partition] = due.purge
            try:
                if partition is REGISTRY_DUE:
                    await self.store.maintain_registry()
                    self.registry_passes += 1
                    log.info("maintained the registry of %s", self.store.uri)
                    continue
                log.debug("maintaining partition table %s%s", table_name(partition),
                          " (purge)" if due.purge else "")
                report = await self.store.maintain(partition, purge=due.purge)
                self.passes += report is not None
                if report is not None and report.ops_pruned and self.pruned is not None:
                    self.pruned(partition)  # their versions must go too: purge
                if report is not None and report.next_expiry_ms is not None:
                    self.due_at(partition, (report.next_expiry_ms - now_ms()) / 1000 + 0.5)
                log.info("maintained partition table %s of %s in %.3fs",
                         report.partition_table if report else "-", self.store.uri,
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
        while not self._stopping:
            await self.run_due()
            pending = [d.at for d in self._due.values() if d.at != float("inf")]
            timeout = max(0.05, min(pending) - time.monotonic()) if pending else None
            self._wake.clear()
            if self._stopping:  # asked during the passes: the wake-up was cleared
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
