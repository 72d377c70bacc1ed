"""Shared fixtures: a real LanceDB store in tmp_path, a fake or the real embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.embedding.files import default_model_dir
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.memory import Memory
from tests.support.memory import open_memory


@pytest.fixture
def fake_embedder() -> HashingEmbedder:
    """Deterministic bag-of-words vectors: for tests where the model is beside the point."""
    return HashingEmbedder()


@pytest.fixture(scope="session")
def real_embedder() -> SentenceTransformerEmbedder:
    """The bundled model, loaded once per test session."""
    return SentenceTransformerEmbedder(default_model_dir())


@pytest.fixture
async def memory(tmp_path: Path, fake_embedder: HashingEmbedder) -> AsyncIterator[Memory]:
    """A memory on a fresh store with the fake embedder."""
    mem = await open_memory(tmp_path / "db", fake_embedder)
    yield mem
    await mem.close()
