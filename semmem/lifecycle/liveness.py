"""The one question backups ask of retention: is this stored fact still live now?

A snapshot holds no forgotten fact; an expired one (retention) is stored until the sweep
forgets it, and from the moment of expiry it must count as gone: a backup writes it as a
tombstone, a restore given the live store as its ledger withholds it. Point this at
retention's own test of a fact and both follow.
"""

from __future__ import annotations

from collections.abc import Callable

from semmem.items import Item

Live = Callable[[Item, int], bool]  # the test below, or a test's own stand-in


def still_live(item: Item, now: int) -> bool:
    """Whether ``item``, held by a partition's latest version, is live at ``now`` (epoch ms)."""
    return True
