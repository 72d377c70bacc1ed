"""A partition deleted by another process and made again under the same name: a process that
held views of the old table never takes the new one for it (the deletion is a version of the
table, so versions never start again), and drops what it holds once it reads the registry."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import lance
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import now_ms
from semmem.memory import Memory
from semmem.store.registry import GONE_KEEP_MS
from semmem.store.rows import table_name
from tests.support.memory import open_memory, small_indexed_memory

Opener = Callable[[Path], Awaitable[Memory]]


async def _small(path: Path) -> Memory:
    return await open_memory(path, HashingEmbedder())


def _version(path: Path, partition: str) -> int:
    return int(lance.dataset(str(path / f"{table_name(partition)}.lance")).version)


async def _texts(memory: Memory, query: str) -> list[str]:
    return [i["text"] for i in (await memory.search("p", query, 5))["items"]]


async def _held_then_replaced(opener: Opener, path: Path,
                              refresh_s: float) -> tuple[Memory, Memory, int]:
    """A reads ``p`` (60 facts) through its views; B deletes it and makes it again with 70
    other facts, in as many versions as A's view is of. Returns A, B and that version."""
    a, b = await opener(path), await opener(path)
    a.retention.refresh_s = refresh_s
    await b.import_("p", [{"text": f"fact {i}"} for i in range(60)])
    assert "fact 3" in await _texts(a, "fact 3")  # A holds the old table's view: seen
    held = a.store.cached_view("p")
    assert held is not None
    await b.delete_partition("p")
    await b.import_("p", [{"text": f"other {i}"} for i in range(70)])
    # The deletion is a version of the table (its tombstone): the versions go on counting,
    # so the new partition never reaches one A holds (a removed table's started again at 1).
    assert _version(path, "p") > held.version
    return a, b, held.version


@pytest.mark.parametrize("opener", [_small, small_indexed_memory], ids=["small", "indexed"])
@pytest.mark.parametrize("refresh_s", [0.0, math.inf], ids=["registry-read", "never-read"])
async def test_a_partition_deleted_and_made_again_elsewhere_is_not_read_as_the_old_one(
        tmp_path: Path, opener: Opener, refresh_s: float) -> None:
    """A's next search sees only the new facts, and its next remember numbers after the new
    table's 70 (a view of the old one handed out 61, a number the new table had already
    given; an indexed one failed on deleted files): whether or not A reads the registry."""
    a, b, _ = await _held_then_replaced(opener, tmp_path, refresh_s=refresh_s)
    try:
        found = await _texts(a, "fact 3")
        assert found and not [t for t in found if t.startswith("fact")]
        assert (await a.remember("p", "written through A"))["n"] == 71
        numbers = [item.n for item in await b.list("p")]
        assert sorted(numbers) == list(range(1, 72))
    finally:
        await a.close()
        await b.close()


@pytest.mark.parametrize("opener", [_small, small_indexed_memory], ids=["small", "indexed"])
async def test_a_deletion_elsewhere_is_seen_at_once_without_reading_the_registry(
        tmp_path: Path, opener: Opener) -> None:
    """No window: A, which never reads the registry again, serves none of the deleted facts
    right after B's delete (its reads ask for the latest version, and the tombstone is it),
    and its next remember is the new partition's first."""
    a, b = await opener(tmp_path), await opener(tmp_path)
    a.retention.refresh_s = math.inf
    try:
        await b.import_("p", [{"text": f"fact {i}"} for i in range(60)])
        assert "fact 3" in await _texts(a, "fact 3")
        assert await b.delete_partition("p") is True
        assert await _texts(a, "fact 3") == []
        assert await a.list("p") == []
        assert (await a.remember("p", "written through A"))["n"] == 1
        assert [i.text for i in await b.list("p")] == ["written through A"]
        assert await b.partitions() == ["p"]
    finally:
        await a.close()
        await b.close()


async def test_a_process_that_followed_nothing_for_half_the_keep_drops_every_view(
        tmp_path: Path) -> None:
    """A process that has not read the registry for half the time deletions are kept there
    may have missed one: it drops every view it holds at its next read."""
    a = await _small(tmp_path)
    try:
        await a.remember("p", "a fact")
        await a.remember("q", "another fact")
        assert a.store.cached_view("p") is not None and a.store.cached_view("q") is not None
        a.store.follow_deleted({})
        assert a.store.cached_view("p") is not None  # recently followed: nothing dropped
        a.store._gone = (time.monotonic() - GONE_KEEP_MS / 2000 - 1, {})
        a.store.follow_deleted({})
        assert a.store.cached_view("p") is None and a.store.cached_view("q") is None
        assert [i.text for i in await a.list("p")] == ["a fact"]
    finally:
        await a.close()


async def test_the_registry_keeps_deleted_tables_for_an_hour(tmp_path: Path) -> None:
    """A deleted table's entry tells the other processes for ``GONE_KEEP_MS``; the registry's
    maintenance then removes it (it names the table)."""
    a = await _small(tmp_path)
    try:
        await a.remember("p", "a fact")
        await a.remember("q", "another fact")
        await a.delete_partition("p")
        registry = a.store.conn.registry
        await registry.put(f"g:{table_name('q')}", {"at": now_ms() - GONE_KEEP_MS - 1})
        await registry.policies()
        assert set(registry.gone) == {table_name("p"), table_name("q")}  # both seen
        await registry.maintain()
        await registry.policies()
        assert set(registry.gone) == {table_name("p")}
    finally:
        await a.close()
