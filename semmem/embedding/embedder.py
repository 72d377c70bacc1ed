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


def queries_differ(embedder: Embedder) -> bool:
    """Whether the model embeds texts searched with apart from stored ones (e5's prefixes)."""
    differ: bool = getattr(embedder, "queries_differ", hasattr(embedder, "embed_queries"))
    return differ


def embed_queries(embedder: Embedder, texts: list[str]) -> Vectors:
    """Embed texts searched with: ``embed_queries`` where the model has a query side (e5's
    ``query: `` prefix), else the one ``embed_batch`` (MiniLM embeds both sides alike)."""
    side = getattr(embedder, "embed_queries", None)
    vectors: Vectors = side(texts) if side is not None else embedder.embed_batch(texts)
    return vectors


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
        self.queries_differ = queries_differ(inner)
        self.call_chars: int | None = getattr(inner, "call_chars", None)  # model queue's budget
        self._size = size
        self._cache: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts``; a single text is served from the cache when seen recently."""
        return self._cached(texts, False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed texts searched with (see :func:`embed_queries`), cached apart from stored
        texts: the two sides' vectors differ where the model has prefixes."""
        return self._cached(texts, True)

    def _cached(self, texts: list[str], query: bool) -> Vectors:
        embed = (lambda batch: embed_queries(self.inner, batch)) if query \
            else self.inner.embed_batch
        if len(texts) != 1 or self._size <= 0:
            return embed(texts)
        key = ("q" if query else "p", texts[0])
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        vec = embed(texts)
        vec.setflags(write=False)
        with self._lock:
            self._cache[key] = vec
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vec
