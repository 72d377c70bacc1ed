"""Backups a running server takes on an owner's request: each one a task, its outcome kept
for the owner to read back (``POST /admin/backups``, ``GET /admin/backups``)."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from semmem.items import now_ms

if TYPE_CHECKING:  # the storage engine loads with the first backup, not with the app
    from semmem.lifecycle.owners import Owners
    from semmem.store.copies.objects import Objects

KEPT = 20  # finished jobs remembered
log = logging.getLogger("semmem.backup")


class BackupJobs:
    """The backups this process started, newest last."""

    def __init__(self) -> None:
        self.jobs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, memory: Owners, target: Objects, default_retention_ms: int | None = None
              ) -> dict[str, Any]:
        """Start a backup of ``memory``'s store into ``target`` (facts expired under the retention,
        whose default is ``default_retention_ms``, as tombstones); returns its job (state
        ``running``)."""
        job: dict[str, Any] = {"job": secrets.token_hex(8), "state": "running",
                               "started": now_ms(), "to": target.uri}
        self.jobs[job["job"]] = job
        while len(self.jobs) > KEPT:
            self.jobs.popitem(last=False)
        task = asyncio.create_task(self._run(job, memory, target, default_retention_ms),
                                   name="semmem-backup")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return dict(job)

    async def _run(self, job: dict[str, Any], memory: Owners, target: Objects,
                   default_retention_ms: int | None) -> None:
        try:
            manifest = await memory.backup(target, default_retention_ms=default_retention_ms)
        except Exception as exc:  # reported to the owner, and logged with its cause
            log.exception("backup into %s failed", target.uri)
            job.update(state="failed", error=f"{type(exc).__name__}: {exc}")
            return
        job.update(state="done", backup=manifest.summary())

    def listing(self) -> list[dict[str, Any]]:
        """Every job remembered, oldest first."""
        return [dict(j) for j in self.jobs.values()]

    async def stop(self) -> None:
        """Cancel the backups still running (their manifests are never written)."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
