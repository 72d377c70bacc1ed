"""LangGraph's test embedder (``CharacterEmbeddings`` in langgraph's
``libs/checkpoint/tests/embed_test_utils.py``, MIT licence, Copyright (c) 2024 LangChain, Inc.):
a text's vector is its character frequencies through a random projection per character.

One change: langgraph draws each character's projection from one generator, lazily, so a
vector depends on which characters the process saw first. A semmem server outlives a test,
so here each character's projection comes from a generator seeded by the seed and the
character alone — the same vectors in the test process and in the server, in any order.
Standard library only: the server's launch code imports this module too.
"""

from __future__ import annotations

import math
import random
from collections import Counter

DIMS = 500  # langgraph's fixture: CharacterEmbeddings(dims=500)
SEED = 42
_projections: dict[tuple[str, int, int], list[float]] = {}


def _projection(char: str, dims: int, seed: int) -> list[float]:
    key = (char, dims, seed)
    if key not in _projections:
        rng = random.Random(f"{seed}:{char}")
        _projections[key] = [rng.gauss(0, 1 / math.sqrt(dims)) for _ in range(dims)]
    return _projections[key]


def char_vector(text: str, dims: int = DIMS, seed: int = SEED) -> list[float]:
    """A text's vector: character frequencies projected, then normalised (zeros if empty)."""
    counts = Counter(text)
    total = sum(counts.values())
    if total == 0:
        return [0.0] * dims
    vector = [0.0] * dims
    for char, count in counts.items():
        weight = count / total
        for i, proj in enumerate(_projection(char, dims, seed)):
            vector[i] += weight * proj
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else vector
