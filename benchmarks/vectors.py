"""Precomputed vectors for the large benchmarks: real embeddings of a base set, cached on disk.

Embedding text costs ~4 ms per fact on this machine, so the 100k/1M-fact and many-partition
runs reuse the real embeddings of a 10k-fact base set (``factgen.facts``): copies beyond the
base get a distinct text suffix and, for the 1M run, a small Gaussian perturbation of the base
vector (re-normalised), so rows are distinct points near real ones. Queries always go through
the real model.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchmarks.factgen import facts
from semmem.embedding.embedder import Embedder
from semmem.items import Vectors

CACHE = Path(__file__).resolve().parent.parent / "data" / "bench-cache"  # /data/ is gitignored
SMOKE_BASE = 64  # the base set's size in a smoke run (``SEMMEM_BENCH_SMOKE`` set by the runner)


def base_set(model: Embedder, size: int = 10_000) -> tuple[list[str], Vectors, float]:
    """``size`` facts and their real embeddings (cached per model); and facts/s when computed.
    In a smoke run, at most ``SMOKE_BASE`` facts (a larger set is cycled by ``expanded``)."""
    if os.environ.get("SEMMEM_BENCH_SMOKE"):
        size = min(size, SMOKE_BASE)
    texts = facts(size)
    digest = hashlib.sha256(model.model_id.encode()).hexdigest()[:12]
    path = CACHE / f"base-{size}-{digest}.npy"
    if path.exists():
        vectors = np.load(path)
        if vectors.shape == (size, model.dim):
            return texts, vectors.astype(np.float32), 0.0
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    vectors = model.embed_batch(texts)
    rate = size / (time.perf_counter() - t0)
    part = path.with_suffix(f".{os.getpid()}.npy")  # whole or absent: runs share the cache
    np.save(part, vectors)
    part.replace(path)
    return texts, vectors, rate


def expanded(
    texts: list[str], vectors: Vectors, total: int, *, noise: float = 0.0, batch: int = 50_000,
    seed: int = 11,
) -> Iterator[tuple[list[str], Vectors]]:
    """``total`` rows in batches: the base cycled, copy ``k`` of a fact suffixed ``[k]``.

    ``noise`` is the standard deviation of the per-component Gaussian perturbation applied to
    copies (not to the base itself); rows are re-normalised.
    """
    rng = np.random.default_rng(seed)
    base = len(texts)
    for start in range(0, total, batch):
        idx = np.arange(start, min(total, start + batch))
        src = idx % base
        copy = idx // base
        pairs = zip(src.tolist(), copy.tolist(), strict=True)
        out_texts = [texts[s] if c == 0 else f"{texts[s]} [{c}]" for s, c in pairs]
        out = vectors[src].copy()
        if noise > 0:
            moved = copy > 0
            out[moved] += rng.normal(0, noise, (int(moved.sum()), vectors.shape[1])).astype(
                np.float32)
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        yield out_texts, np.ascontiguousarray(out, np.float32)
