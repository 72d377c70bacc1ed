"""The one question backups ask of retention: is this stored fact still live now?

A snapshot holds no forgotten fact; an expired one (retention) is stored until the sweep
forgets it, and from the moment of expiry it must count as gone: a backup writes it as a
tombstone, a restore given the live store as its ledger withholds it. The test is
retention's own (``retention.is_live``) under the partition's effective max age.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from semmem.items import Item
from semmem.lifecycle.retention import in_force, is_live
from semmem.store.rows import table_name

if TYPE_CHECKING:
    from semmem.store.tables import Store

Live = Callable[[Item, int], bool]  # a partition's test, or a test's own stand-in


def still_live(item: Item, now: int) -> bool:
    """Whether ``item`` is live at ``now`` (epoch ms) by its own ``expiresAt`` alone."""
    return is_live(item, None, now)


async def policies(store: Store, default_ms: int | None) -> Callable[[str], Live]:
    """Each partition's test under its effective max age: its override in ``store`` (read
    once, now), else ``default_ms`` (the deployment's ``SEMMEM_RETENTION``)."""
    overrides, applied = await store.retention_policies()
    default_ms = in_force(default_ms, applied)

    def of(partition: str) -> Live:
        name = table_name(partition)
        max_age = overrides.get(name, default_ms)  # an override of None: keep forever
        return lambda item, now: is_live(item, max_age, now)

    return of
