"""The server's side of the forget window: a follow-up purge after each forget, and a sweep
after a restart.

``Maintainer`` purges a partition ``retention + delay`` after a forget: it compacts, then
removes the versions older than the retention. Versions committed between the forget and that
compaction are younger than the retention at that moment and still reference the old data
file holding the forgotten text, so only a second pass, a retention later, removes the file
(measured: a forget followed by three writes within the retention kept the text on disk for
good). A process killed before its pass forgets its schedule: after a restart, every partition
gets one purge, so nothing forgotten before a crash stays on disk, and another once the files a
killed write may have left are older than the store's ``orphan_age`` (the purge deletes them).
Deleting a partition purges the registry the same way, so the partition's name leaves it.
"""

from __future__ import annotations

import asyncio
import logging
import time

from semmem.maintenance import REGISTRY, Maintainer

log = logging.getLogger("semmem.web")


class Purger:
    """Schedules purges on a ``Maintainer``: at once for a write that drops a text, and a
    follow-up ``lag`` seconds later for the versions that the first pass had to keep."""

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

    def on_write(self, partition: str, forgot: bool) -> None:
        """The memory core's write hook: count the write; a forget also gets its follow-up."""
        self.maintainer.touched(partition, forgot)
        if forgot:
            self._follow_up(partition)

    def on_drop(self, partition: str) -> None:
        """The memory core's delete-partition hook: purge the name from the registry."""
        self.purge(REGISTRY)

    def purge(self, partition: str | None) -> None:
        """Purge ``partition`` as after a forget (an update's old text, a restart's leftovers);
        ``REGISTRY`` purges the registry."""
        self.maintainer.touched(partition, True)
        self._follow_up(partition)

    def _follow_up(self, partition: str | None) -> None:
        now = time.monotonic()
        self._latest[partition] = now
        if partition not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[partition] = loop.call_later(self.lag, self._fire, partition, now)

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
        for partition in [*partitions, REGISTRY]:
            self.purge(partition)
        log.info("start-up purge scheduled for %d partition(s)", len(partitions))
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
