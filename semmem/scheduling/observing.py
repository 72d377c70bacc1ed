"""What the memory core tells about its writes, to whoever keeps the store in shape."""

from __future__ import annotations

from typing import Protocol


class WriteObserver(Protocol):
    """Told of every write (the server's maintenance schedules compaction and purges)."""

    def written(self, partition: str, dropped: bool) -> None:
        """A write was attempted; ``dropped``: it may have dropped a value (a forget's text, an
        update's old text or record field)."""

    def partition_deleted(self, partition: str) -> None:
        """A partition was deleted (its name must leave the registry's files)."""

    def purge_pending(self, partition: str) -> float | None:
        """Seconds until the last pass of a pending purge of ``partition`` (a dropped text is
        in no file after it), or ``None`` when none is pending."""

    def start(self, partitions: list[str]) -> None:
        """Begin background work on the running event loop."""

    async def stop(self) -> None:
        """End background work."""


class QuietObserver:
    """An observer that does nothing: subclass it to hear only some events."""

    def written(self, partition: str, dropped: bool) -> None:
        """A write was attempted."""

    def partition_deleted(self, partition: str) -> None:
        """A partition was deleted."""

    def purge_pending(self, partition: str) -> float | None:
        """None pending."""
        return None

    def start(self, partitions: list[str]) -> None:
        """Nothing to start."""

    async def stop(self) -> None:
        """Nothing to stop."""
