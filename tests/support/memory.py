"""A memory over a real LanceDB directory, for tests that open one (or reopen one) themselves."""

from __future__ import annotations

from pathlib import Path

from semmem.memory import Memory
from semmem.store import Store


async def open_memory(path: Path, embedder: object) -> Memory:
    """A memory over a real LanceDB directory."""
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id)  # type: ignore[attr-defined]
    await store.open()
    return Memory(store, embedder)  # type: ignore[arg-type]
