"""The embedding interface every encoder implements, and the query cache in front of one.

An embedder is one small protocol with one required method (``embed_batch``); the encoders
are ``semmem.embedding.onnx`` (serving), ``semmem.embedding.reference`` (sentence-transformers
on torch) and ``semmem.embedding.fakes`` (tests), and ``semmem.embedding.choice`` picks one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from semmem.items import Vectors


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    model_id: str
    dim: int

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts``; returns an array of shape ``(len(texts), dim)``, rows of norm 1."""
        ...


def normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to norm 1 (a zero row stays zero), as contiguous float32."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


class CachedEmbedder:
    """Wraps an embedder with an LRU cache of recent single texts (queries repeat often)."""

    def __init__(self, inner: Embedder, size: int = 1024) -> None:
        self.inner = inner
        self.encoder: str = getattr(inner, "encoder", type(inner).__name__)
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts``; a single text is served from the cache when seen recently."""
        if len(texts) != 1 or self._size <= 0:
            return self.inner.embed_batch(texts)
        key = texts[0]
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        vec = self.inner.embed_batch(texts)
        vec.setflags(write=False)
        with self._lock:
            self._cache[key] = vec
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vec
