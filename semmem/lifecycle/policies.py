"""The owner's retention controls: show, preview and set a partition's policy, the facts due.

Every surface (``semmem retention``, the admin API, the console) calls these. A change applies
to the facts already stored: ``preview`` says first how many a policy would expire now, and
``set`` forgets them at once (through the forget path) rather than at the next sweep. What
was already expired under the old policy is forgotten before the change, so a longer policy
never brings back a fact that reads had already dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from semmem.items import iso, now_ms, one_line
from semmem.lifecycle.retention import format_duration, parse_policy
from semmem.lifecycle.sweep import sweep

if TYPE_CHECKING:
    from semmem.lifecycle.owners import Owners

DUE_SHOWN = 50  # facts listed as due, soonest first


async def show(memory: Owners, partition: str | None = None) -> dict[str, Any]:
    """One partition's policy with its live count, or the default and every override."""
    retention = memory.retention
    if partition is not None:
        policy = await retention.policy(partition)
        return {**policy.public(), "count": (await memory.stats(partition))["count"]}
    overrides = []
    for name in await memory.partitions():
        policy = await retention.policy(name)
        if not policy.inherits:
            overrides.append({"partition": name, "override": policy.public()["override"]})
    return {"default": format_duration(retention.default_ms), "overrides": overrides}


async def preview(memory: Owners, value: str, partition: str | None = None) -> dict[str, Any]:
    """How many live facts policy ``value`` (a duration or ``never``) would expire now, in
    ``partition`` or in every partition that inherits the default (a default's preview).

    Raises:
        InvalidArguments: ``value`` is not a policy.
    """
    max_age = parse_policy(value)
    retention = memory.retention
    names = [partition] if partition is not None else [
        name for name in await memory.partitions()
        if (await retention.policy(name)).inherits]
    rows = []
    for name in names:
        view = await memory.read_view(name)
        rows.append({"partition": name, "count": view.count,
                     "expire": len(await retention.expired(view, max_age))})
    return {"policy": format_duration(max_age), "expire": sum(r["expire"] for r in rows),
            "partitions": rows}


async def set_policy(memory: Owners, partition: str, value: str) -> dict[str, Any]:
    """Set ``partition``'s override (a duration, ``never`` or ``inherit``) and forget what it
    expires now; returns the new policy and the numbers forgotten.

    Raises:
        InvalidArguments: ``value`` is not a policy.
    """
    if value.strip().lower() != "inherit":
        parse_policy(value)  # refused before anything is forgotten
    before = await sweep(memory, [partition])
    policy = await memory.retention.set(partition, value)
    after = await sweep(memory, [partition])
    return {**policy.public(), "expired": sorted(before.get(partition, [])
                                                 + after.get(partition, []))}


async def due(memory: Owners, partition: str, limit: int = DUE_SHOWN) -> dict[str, Any]:
    """The policy and the facts that will expire, soonest first (at most ``limit``)."""
    retention = memory.retention
    policy = await retention.policy(partition)
    snap = await memory.snapshot(partition)
    found = retention.due(snap, policy.max_age_ms)
    return {**policy.public(), "count": snap.count, "due": len(found),
            "next": None if not found else iso(found[0][1]),
            "items": [{"n": it.n, "text": one_line(it.text)[:200], "expiresAt": iso(at),
                       "inS": max(0, int(np.ceil((at - now_ms()) / 1000)))}
                      for it, at in found[:limit]]}
