"""Backups' fixtures: a live store with the fake embedder, a backup target, new stores."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects
from tests.support.memory import open_memory


@pytest.fixture
async def live(tmp_path: Path, fake_embedder: HashingEmbedder) -> AsyncIterator[Memory]:
    """The store being backed up (and the ledger of restores)."""
    mem = await open_memory(tmp_path / "live", fake_embedder)
    yield mem
    await mem.close()


@pytest.fixture
def target(tmp_path: Path) -> Objects:
    """A backup target directory."""
    return Objects(str(tmp_path / "backups"))


@pytest.fixture
async def fresh(tmp_path: Path, fake_embedder: HashingEmbedder) -> AsyncIterator[Store]:
    """A new, empty store to restore into (its model: the live store's)."""
    store = Store(str(tmp_path / "restored"), dim=fake_embedder.dim,
                  model_id=fake_embedder.model_id)
    await store.open()
    yield store
    await store.close()
