"""The engine's upkeep as doors of ``Store``: a partition's compaction, pruning and old
versions removed (``maintain``), its indexes built past the threshold (``build_index``); the
work itself is ``Upkeep``'s (``compaction.py``, ``indexes.py``)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from semmem.store.upkeep.compaction import MaintenanceReport, Upkeep

if TYPE_CHECKING:
    from semmem.store.connection import Connection


class Maintained:
    """The upkeep doors of ``Store``: what they use of it, and the doors."""

    conn: Connection
    upkeep: Upkeep

    async def maintain(self, partition: str, *, retention: timedelta | None = None,
                       purge: bool = True) -> MaintenanceReport | None:
        """Prune expired op records, compact (materialising deletions) and remove old versions.

        After this returns, forgotten texts are in no file of the partition unless they are in a
        version younger than ``retention`` (default: the store's ``version_retention``).
        """
        tbl = await self.conn.writable(partition)
        if tbl is None:
            return None
        report = await asyncio.to_thread(self.upkeep.maintain, await tbl.uri(), retention,
                                         purge)
        await tbl.checkout_latest()
        return replace(report, partition=partition)

    async def build_index(self, partition: str) -> str:
        """Build (or bring up to date) the indexes of a partition past the index threshold."""
        tbl = await self.conn.writable(partition)
        if tbl is None:
            return ""
        done = await asyncio.to_thread(self.upkeep.build_index, await tbl.uri())
        await tbl.checkout_latest()
        return done
