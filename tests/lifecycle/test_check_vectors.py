"""`semmem check` looks at the vectors too (issue 60): live items embedded by another model
than the store's — labelled so, or labelled right and embedded otherwise (a sample re-embedded
shows it) — are a problem, and `--repair` re-embeds the partition with the store's model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import Vectors
from semmem.memory import Memory
from semmem.store import Store
from tests.support.memory import open_memory


class Otherwise(HashingEmbedder):
    """Another model under the store's model id: its vectors rolled by one coordinate."""

    def embed_batch(self, texts: list[str]) -> Vectors:
        return np.roll(super().embed_batch(texts), 1, axis=1)


async def _memory(path: Path, embedder: HashingEmbedder) -> Memory:
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id)
    await store.open(check_model=False)
    return Memory(store, embedder)


async def test_check_finds_vectors_of_another_model_and_repair_re_embeds_them(
        tmp_path: Path) -> None:
    memory = await open_memory(tmp_path, HashingEmbedder())
    for text in ("Prefers metric units", "Has a cat named Tom", "Lives in Lyon"):
        await memory.remember("p", text)
    assert (await memory.check("p")).problems == []  # the store's own vectors: fine
    await memory.close()

    wrong = await _memory(tmp_path, Otherwise())  # labelled right, embedded otherwise
    await wrong.remember("p", "Works nights on Fridays")
    await wrong.close()
    other = await _memory(tmp_path, HashingEmbedder(model_id="hashing-other"))
    await other.remember("q", "Speaks Portuguese")  # a partition of another model's label
    await other.close()

    memory = await _memory(tmp_path, HashingEmbedder())
    found = (await memory.check("p")).problems
    assert found == ["1 of 4 sampled vectors are not what the store's model makes of their "
                     "text (e.g. n=4)"], found
    found = (await memory.check("q")).problems
    assert found and found[0].startswith("1 live item(s) embedded by another model than the "
                                         "store's 'hashing-64'"), found
    for partition in ("p", "q"):
        repaired = await memory.check(partition, repair=True)
        assert repaired.repaired and all(p.endswith("(re-embedded)")
                                         for p in repaired.problems), repaired.problems
        assert (await memory.check(partition)).problems == []
    hit = (await memory.search("p", "Works nights on Fridays", 1))["items"][0]
    assert hit["n"] == 4
    await memory.close()


async def test_check_with_another_model_than_the_stores_does_not_compare(
        tmp_path: Path) -> None:
    memory = await open_memory(tmp_path, HashingEmbedder())
    await memory.remember("p", "Prefers metric units")
    await memory.close()
    other = await _memory(tmp_path, HashingEmbedder(model_id="hashing-other"))
    assert (await other.check("p")).problems == []  # nothing to compare with
    await other.close()
