"""The retention sweep: expired facts forgotten through the forget path.

Reads hide an expired fact from the moment it expires (``lifecycle/retention.py``); the sweep
then forgets it like ``forget`` does, so the purge that follows every forget takes its text off
every file within the forget window. A server sweeps once at start-up and every
``SEMMEM_RETENTION_SWEEP_S`` (``Maintenance`` runs it); each replica may sweep, and a fact
already forgotten by another is simply skipped. Numbers are never reused: expired numbers are
tombstones like forgotten ones. A sweep of every partition records the deployment default as
applied: a longer default takes effect only after one (``retention.in_force``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from semmem.lifecycle.owners import Owners

log = logging.getLogger("semmem.web")
CHUNK = 256  # expired facts forgotten per commit


async def sweep(memory: Owners, partitions: list[str] | None = None) -> dict[str, list[int]]:
    """Forget every fact expired now in ``partitions`` (default: all); returns the numbers
    forgotten per partition (partitions with none left out)."""
    done: dict[str, list[int]] = {}
    for partition in partitions if partitions is not None else await memory.partitions():
        view = await memory.stored_view(partition)
        max_age = await memory.retention.max_age(partition)
        numbers = await memory.retention.expired(view, max_age)
        for start in range(0, len(numbers), CHUNK):
            gone = await memory.expire(partition, numbers[start:start + CHUNK])
            done.setdefault(partition, []).extend(gone)
    if partitions is None:  # every partition swept under the default in force
        await memory.retention.settle()
    if done:
        log.info("retention sweep forgot %d expired fact(s) in %d partition(s)",
                 sum(map(len, done.values())), len(done))
    return done
