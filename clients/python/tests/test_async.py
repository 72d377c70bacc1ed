"""``AsyncClient`` against a real server: the same verbs and turns as ``Client``."""

from __future__ import annotations

import asyncio

import pytest

from semmem_client import Conflict, NotFound

from conftest import async_client
from tests.support.server import ServerProcess


def test_async_verbs_and_turn_conflict(server: ServerProcess, partition: str) -> None:
    """Remember, recall, search, a turn's update, then its stale forget → ``Conflict``; calls
    run concurrently on one client."""

    async def run() -> None:
        async with async_client(server.url) as memory:
            stored = await asyncio.gather(*(memory.remember(partition, f"Visited city {i}")
                                            for i in range(4)))
            assert sorted(r["n"] for r in stored) == [1, 2, 3, 4]
            recall = await memory.recall(partition, None, max_bytes=4096)
            assert len(recall.sources) == 4 and recall.cursor
            assert (await memory.search(partition, "Visited city 2", limit=1))["count"] == 4
            turn = await memory.turn(partition, None)
            assert (await turn.update(2, "Visited Oslo"))["n"] == 2
            with pytest.raises(Conflict) as refused:
                await turn.forget(2)
            assert refused.value.status == 409
            with pytest.raises(NotFound):
                await memory.forget(partition, 99)
            assert (await memory.forget(partition, 2))["count"] == 3

    asyncio.run(run())
