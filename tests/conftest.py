"""Shared fixtures: a real LanceDB store in tmp_path, a fake or the real embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(autouse=True)
def store_invariants(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test, each partition table it left under its ``tmp_path`` passes
    ``semmem check`` (one head, one row per key, numbers under the mark, tombstones without
    text, every referenced file there). ``@pytest.mark.broken_store`` opts a test out."""
    if "tmp_path" not in request.fixturenames or request.node.get_closest_marker("broken_store"):
        yield
        return
    root: Path = request.getfixturevalue("tmp_path")
    yield
    from semmem.store.upkeep.check import check_table

    broken = {}
    for table in root.rglob("p_*.lance"):
        if (table / "_versions").is_dir():
            problems = check_table(str(table))
            if problems:
                broken[str(table.relative_to(root))] = problems
    assert not broken, f"store invariants broken: {broken}"


@pytest.fixture
def spans() -> Iterator[Any]:
    """Tracing on for the test, into memory (an ``InMemorySpanExporter``)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from semmem import tracing
    from semmem.serving.otel import OtelTracer

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(OtelTracer(provider))
    try:
        yield exporter
    finally:
        tracing.install(None)
        provider.shutdown()
