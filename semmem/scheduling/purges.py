"""The forget window: ``Purger`` adds the follow-up passes that make a dropped text leave every
file."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from semmem.scheduling.maintainer import REGISTRY_DUE, Maintainer

purge_log = logging.getLogger("semmem.web")


class Later:
    """A call of ``fire`` per partition once the latest time asked for has come: an ask while
    one waits pushes the waiting one back by nothing; it fires when first due, then once more
    for what was asked later meanwhile."""

    def __init__(self, fire: Callable[[str | None], None]) -> None:
        self._fire = fire
        self._until: dict[str | None, float] = {}  # the latest due time asked (monotonic)
        self._timers: dict[str | None, tuple[asyncio.TimerHandle, float]] = {}  # and its due

    def ask(self, partition: str | None, seconds: float) -> None:
        """Have ``fire(partition)`` called ``seconds`` from now at the latest."""
        due = time.monotonic() + seconds
        self._until[partition] = max(due, self._until.get(partition, due))
        if partition not in self._timers:
            self._arm(partition, seconds, due)

    def _arm(self, partition: str | None, seconds: float, due: float) -> None:
        handle = asyncio.get_running_loop().call_later(seconds, self._due, partition)
        self._timers[partition] = (handle, due)

    def _due(self, partition: str | None) -> None:
        _, due = self._timers.pop(partition)
        self._fire(partition)
        until = self._until.pop(partition)
        if until > due:  # asked for later meanwhile: that one fires too
            self._until[partition] = until
            self._arm(partition, max(0.0, until - time.monotonic()), until)

    def when(self, partition: str | None) -> float | None:
        """When (monotonic) the next call for ``partition`` is, if one is pending."""
        timer = self._timers.get(partition)
        return None if timer is None else float(timer[0].when())  # the loop's clock

    def pending(self) -> set[str | None]:
        """The partitions with a call to come."""
        return set(self._timers)

    def cancel(self) -> None:
        """Call nothing more."""
        for handle, _ in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._until.clear()


class Purger:
    """The forget window: schedules purges on a ``Maintainer`` at once for a write that drops a
    text, and a follow-up ``lag`` seconds later.

    The first pass compacts and removes versions older than the retention; versions committed
    between the forget and that compaction still reference the old data file, so only the
    follow-up removes it. A killed process loses its schedule, so a start purges every
    partition once (at once: what is past the retention goes), and again when a killed
    write's leftover files are old enough to delete.
    Deleting a partition purges the registry the same way.
    """

    def __init__(self, maintainer: Maintainer, retention_s: float, delay_s: float) -> None:
        self.maintainer = maintainer
        self.retention_s, self.delay_s = retention_s, delay_s
        # The follow-up's pass must start at least a retention after the first pass compacted;
        # the extra max(delay, 1 s) absorbs the first pass waiting behind other partitions.
        self.lag = retention_s + delay_s + max(delay_s, 1.0)
        self._follow_ups = Later(lambda partition: self.maintainer.touched(partition, True))
        self._asked = Later(self.purge)  # purges asked for later
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

    def requested(self, partition: str, orphan_age_s: float) -> None:
        """Purge ``partition`` for another process that asked (the CLI, a server stopping):
        now, and again once files that process may have been writing when it stopped are
        ``orphan_age_s`` old, so the orphan sweep takes them (a stopping server's last pass
        may have been cut mid-write)."""
        self.purge(partition)
        self.purge_later(partition, orphan_age_s)

    def purge_later(self, partition: str | None, seconds: float) -> None:
        """Purge ``partition`` in ``seconds`` (after the maintenance delay); asked again
        meanwhile, it purges when first due and again when last due."""
        self._asked.ask(partition, seconds + self.delay_s)

    def _follow_up(self, partition: str | None) -> None:
        self._follow_ups.ask(partition, self.lag)

    def pending(self) -> set[str | None]:
        """Every partition whose purge is not done yet: a pass due or under way, or its
        follow-up still to come."""
        return self.maintainer.purging() | self._follow_ups.pending() | self._asked.pending()

    def follow_up_at(self, partition: str) -> float | None:
        """When (monotonic) ``partition``'s follow-up purge fires, if one is pending."""
        return self._follow_ups.when(partition)

    def sweep(self, partitions: list[str], orphan_age_s: float | None = None) -> None:
        """After a start: purge every partition and the registry once (a killed process's
        schedule is lost, a stopped one's handed on), and again after ``orphan_age_s`` when
        the files a killed write may have left are old enough to be deleted.

        The first pass runs at once: versions already past the retention (a short session's
        that ended before its purge) go in it; younger ones, in the follow-up."""
        for partition in [*partitions, REGISTRY_DUE]:
            self.maintainer.purge_soon(partition)
            self._follow_up(partition)
        purge_log.info("start-up purge scheduled for %d partition(s) of %s", len(partitions),
                      self.maintainer.store.uri)
        if orphan_age_s is not None:
            loop = asyncio.get_running_loop()
            self._later = loop.call_later(orphan_age_s + self.delay_s, self.sweep, partitions)

    def stop(self) -> None:
        """Cancel pending follow-ups (the next start sweeps again)."""
        self._follow_ups.cancel()
        self._asked.cancel()
        if self._later is not None:
            self._later.cancel()
            self._later = None
