"""The evaluation's embedding cache on disk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.evaluation.embeddings import DiskCachedEmbedder


def test_disk_cache_embeds_each_text_once(tmp_path: Path) -> None:
    loads: list[int] = []

    def load() -> HashingEmbedder:
        loads.append(1)
        return HashingEmbedder()

    cached = DiskCachedEmbedder("hashing-64", load, tmp_path)
    first = cached.embed_batch(["a cat", "a dog", "a cat"])
    assert cached.misses == 2 and len(loads) == 1
    np.testing.assert_array_equal(first[0], first[2])

    def refuse() -> HashingEmbedder:
        raise AssertionError("the model must not load when every text is cached")

    again = DiskCachedEmbedder("hashing-64", refuse, tmp_path)
    assert again.dim == 64
    np.testing.assert_array_equal(again.embed_batch(["a dog", "a cat"]), first[[1, 0]])


def test_disk_cache_rejects_another_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not other-model"):
        DiskCachedEmbedder("other-model", HashingEmbedder, tmp_path / "c")
