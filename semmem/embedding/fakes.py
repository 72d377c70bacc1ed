"""Deterministic embedders for tests and examples where the model is beside the point."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from semmem.embedding.embedder import normalise
from semmem.items import Vectors

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """A deterministic bag-of-words embedder for tests where the model is beside the point.

    Texts sharing words get similar vectors; no model, no randomness.
    """

    def __init__(self, dim: int = 64, model_id: str = "hashing-64") -> None:
        self.dim = dim
        self.model_id = model_id

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Hash each lower-cased word into a bucket with a sign; normalise."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        return normalise(out)
