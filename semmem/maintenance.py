"""Background maintenance for a running server: compaction, pruning and purging forgets.

Writes report themselves here (``touched``); a partition is maintained once enough writes
piled up (``compact_every``) and, after a forget, as soon as the old versions holding the text
are past the store's retention, so a forgotten text leaves every file within
``version_retention + delay + the maintenance pass`` (documented as the forget window).
The registry (partition names) is maintained under the key ``REGISTRY`` after a partition is
deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from semmem.store import Store

log = logging.getLogger(__name__)

REGISTRY = None  # the key under which the registry, not a partition, is due


@dataclass
class _Due:
    at: float
    writes: int = 0
    purge: bool = False


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

    def touched(self, partition: str | None, forgot: bool) -> None:
        """Record a committed write (called by the memory core); ``REGISTRY`` for the registry."""
        due = self._due.setdefault(partition, _Due(at=float("inf")))
        due.writes += 1
        now = time.monotonic()
        if forgot:
            due.purge = True
            purge_at = now + self.store.version_retention.total_seconds() + self.delay_s
            due.at = min(due.at, purge_at)
        if due.writes >= self.compact_every:
            due.at = min(due.at, now + self.delay_s)
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
            try:
                if partition is REGISTRY:
                    await self.store.maintain_registry()
                    self.registry_passes += 1
                    log.info("maintained the registry")
                    continue
                report = await self.store.maintain(partition)
                self.passes += report is not None
                log.info("maintained partition table %s in %.3fs",
                         report.partition_table if report else "-",
                         report.seconds if report else 0.0)
            except Exception:  # keep the loop alive; try again later
                log.exception("maintenance failed; will retry")
                due.at = time.monotonic() + max(self.delay_s, 1.0)
                self._due[partition] = due
        return len(ready)

    async def _run(self) -> None:
        while True:
            await self.run_due()
            pending = [d.at for d in self._due.values() if d.at != float("inf")]
            timeout = max(0.05, min(pending) - time.monotonic()) if pending else None
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
