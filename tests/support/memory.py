"""A memory over a real LanceDB directory, for tests that open one (or reopen one) themselves."""

from __future__ import annotations

import asyncio
from pathlib import Path

from semmem.items import iso, now_ms
from semmem.memory import Memory
from semmem.store import Store


async def open_memory(path: Path, embedder: object) -> Memory:
    """A memory over a real LanceDB directory."""
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id)  # type: ignore[attr-defined]
    await store.open()
    return Memory(store, embedder)  # type: ignore[arg-type]


async def small_indexed_memory(path: Path) -> Memory:
    """A memory (fake embedder) whose partitions are indexed past 50 facts, reading 40
    candidates through the index: what the filtered-read tests use to reach the indexed path."""
    from semmem.embedding.fakes import HashingEmbedder

    embedder = HashingEmbedder()
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id, index_threshold=50)
    await store.open()
    return Memory(store, embedder, index_candidates=40)


async def remember_expired(memory: Memory, partition: str, text: str) -> int:
    """A fact that has expired: remembered, then ended by its owner (a new fact's own expiry
    must be in the future); its number."""
    n = int((await memory.remember(partition, text))["n"])
    await memory.update(partition, n, attrs={"expiresAt": iso(now_ms() - 1)})
    return n


async def older_table(path: Path, texts: list[str], dropped: list[str]) -> str:
    """Partition ``p`` of a store at ``path`` holding ``texts``, written by this code, then
    made an older schema's table by dropping the columns it lacked (``dropped``); its URI."""
    import lance

    from semmem.embedding.fakes import HashingEmbedder
    from semmem.store.rows import table_name

    mem = await open_memory(path, HashingEmbedder())
    for text in texts:
        await mem.remember("p", text)
    await mem.close()
    uri = str(path / f"{table_name('p')}.lance")
    lance.dataset(uri).drop_columns(dropped)
    return uri


OTHER_MODEL = "multilingual-e5-small@0123456789ab"  # as a store embedded by e5 records it


def store_of_another_model(data: Path) -> None:
    """A real store at ``data`` holding one fact, embedded by a model other than the default
    one (``OTHER_MODEL``): what a start with the default model must refuse."""
    from semmem.embedding.fakes import HashingEmbedder

    async def write() -> None:
        memory = await open_memory(data, HashingEmbedder(dim=384, model_id=OTHER_MODEL))
        await memory.remember("p", "Prefers metric units")
        await memory.close()

    asyncio.run(write())
