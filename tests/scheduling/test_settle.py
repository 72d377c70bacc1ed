"""A stdio session's end (``Maintenance.settle``): after its hand-off it runs the pending
purges' passes now, bounded in time, so what is past the retention leaves before it exits."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.scheduling.maintainer import REGISTRY_DUE
from semmem.scheduling.schedule import Maintenance
from semmem.store import Store
from semmem.store.commit.fence import Fence
from tests.support.files import decoded_hits


async def _past_retention(store: Store, partitions: str) -> None:
    """Wait until every version of ``partitions`` but the latest is past the retention (what
    a session that starts a while after the forget finds), with a deadline."""
    import lance

    keep = store.upkeep.version_retention.total_seconds()
    started = time.monotonic()
    for partition in partitions:
        uri = await store.conn.uri_of(partition)
        assert uri is not None
        while True:
            newest = max(v["timestamp"] for v in lance.dataset(uri).versions()[:-1])
            # naive local times, as Lance gives them
            if (datetime.now() - newest).total_seconds() > keep + 0.1:
                break
            assert time.monotonic() - started < 30, "versions never aged"
            await asyncio.sleep(0.05)


async def test_settle_runs_the_pending_passes_within_its_bound(tmp_path: Path) -> None:
    """No time: no pass starts (the hand-off has them). Time enough: one pass each, and a
    forget whose versions are past the retention leaves every file in it."""
    emb = HashingEmbedder()
    root = tmp_path / "db"
    store = Store(str(root), dim=emb.dim, model_id=emb.model_id,
                  fence=Fence(skew=0.05, budget=0.3), version_retention=timedelta(0))
    await store.open()
    memory = Memory(store, emb)  # a process without maintenance made the forgets
    secrets = [f"the {p} door code is 40{i}7-settle" for i, p in enumerate("ab")]
    try:
        for partition, secret in zip("ab", secrets, strict=True):
            n = (await memory.remember(partition, secret))["n"]
            await memory.remember(partition, "an ordinary fact")
            await memory.forget(partition, n)
        await _past_retention(store, "ab")
        maintenance = Maintenance(store, 0.05, 32, follow_s=0)
        maintenance.settle_first.add("b")
        pending: set[str | None] = {"a", "b", REGISTRY_DUE}
        assert await maintenance.settle(pending, 0.0) == 0
        assert decoded_hits(root, secrets) == {0, 1}  # the positive control
        assert await maintenance.settle(pending, 60.0) == 3
        assert decoded_hits(root, secrets) == set()
    finally:
        await memory.close()
