"""The owner's calls against a real server (admin API, admin token): one fact by number,
pages, every fact, export, an edit, the partition's erasure."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from semmem_client import Client

from conftest import PATH, async_client
from tests.support.server import ADMIN_TOKEN, TOKEN, ServerProcess


def test_get_list_items_export_edit_and_delete_partition(owner: Client, partition: str
                                                         ) -> None:
    """``get`` by number (``None`` when there is none), ``list`` a page at a time,
    ``items`` across pages, ``export`` as JSONL records, ``edit`` an expiry, and
    ``delete_partition``: the facts are gone, a second delete says it found nothing."""
    for text in ("Speaks Greek", "Lives in Rome", "Runs marathons"):
        owner.remember(partition, text)
    owner.forget(partition, 2)
    fact = owner.get(partition, 3)
    assert fact is not None and (fact["n"], fact["text"], fact["revision"]) == (
        3, "Runs marathons", 1)
    assert owner.get(partition, 2) is None and owner.get(partition, 99) is None
    page = owner.list(partition, offset=0, limit=1)
    assert ([i["n"] for i in page["items"]], page["count"], page["next"]) == ([1], 2, 1)
    assert owner.list(partition, offset=1, limit=1)["next"] is None
    assert [i["text"] for i in owner.items(partition, page=1)] == ["Speaks Greek",
                                                                    "Runs marathons"]
    assert [r["text"] for r in owner.export(partition)] == ["Speaks Greek", "Runs marathons"]
    edited = owner.edit(partition, 1, {"note": "since childhood"})
    assert edited["item"]["note"] == "since childhood"
    assert partition in owner.partitions(limit=1000)["partitions"]
    assert owner.delete_partition(partition) is True
    assert owner.list(partition)["count"] == 0 and owner.get(partition, 1) is None
    assert owner.recall(partition, None).text == ""
    assert owner.delete_partition(partition) is False


def test_export_gives_the_facts_not_the_ledger_lines(owner: Client, server: ServerProcess,
                                                   partition: str) -> None:
    """A partition whose conversation had a message forgotten: the server's export ends with
    the ledger lines (``semmem import`` keeps them), ``export`` gives the facts alone."""
    said = owner.ingest(partition, "chat-1", [{"role": "user", "content": "Owns a red kayak"},
                                              {"role": "user", "content": "Lives by a lake"}])
    owner.forget(partition, said["items"][0][0])
    raw = httpx.get(f"{server.url}/admin/export", params={"partition": partition},
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    lines = [json.loads(line) for line in raw.text.splitlines()]
    assert [sorted(r)[0] for r in lines[1:]] == ["digestKeys", "forgotten"]  # the control
    assert [r["text"] for r in owner.export(partition)] == ["Lives by a lake"]


def test_owner_calls_async(server: ServerProcess, partition: str) -> None:
    """The same calls on ``AsyncClient``."""

    async def run() -> None:
        async with async_client(server.url, admin_token=ADMIN_TOKEN) as memory:
            await memory.remember(partition, "Keeps a kayak")
            fact = await memory.get(partition, 1)
            assert fact is not None and fact["text"] == "Keeps a kayak"
            assert [i["n"] async for i in memory.items(partition)] == [1]
            assert (await memory.list(partition))["count"] == 1
            assert len(await memory.export(partition)) == 1
            assert await memory.delete_partition(partition) is True

    asyncio.run(run())


def test_owner_calls_need_an_admin_token(server: ServerProcess, partition: str) -> None:
    """Without an admin token the owner's calls say which token they need, before sending."""
    with Client(server.url, TOKEN, memory_path=PATH) as memory:
        for call in (lambda: memory.get(partition, 1), lambda: memory.list(partition),
                     lambda: memory.export(partition),
                     lambda: memory.delete_partition(partition)):
            with pytest.raises(ValueError, match="SEMMEM_ADMIN_TOKEN"):
                call()
