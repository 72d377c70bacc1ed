"""An embedder with an on-disk cache, so sweeps over a labelled set embed each text once.

Vectors are stored in one ``.npz`` per model under the cache folder, keyed by the SHA-256 of
the text; the model is loaded only when a text is missing from the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from semmem.embedding.embedder import Embedder, embed_queries
from semmem.items import Vectors

CACHE_ENV = "SEMMEM_EVAL_CACHE"


def default_cache_dir() -> Path:
    """``$SEMMEM_EVAL_CACHE``, else ``semmem-eval-cache`` under the system temp folder."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / "semmem-eval-cache"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class DiskCachedEmbedder:
    """Embedder protocol over a lazily loaded model and a per-model vector file."""

    def __init__(
        self, model_id: str, load: Callable[[], Embedder], cache_dir: Path | None = None,
        variant: str = "", queries_differ: bool = False,
    ) -> None:
        self.model_id = model_id
        self.queries_differ = queries_differ
        self._load = load
        self._inner: Embedder | None = None
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id + variant)
        self.path = (cache_dir or default_cache_dir()) / f"{slug}.npz"
        self._vectors: dict[str, Vectors] = {}
        self.misses = 0
        try:
            with np.load(self.path) as data:
                keys, matrix = data["keys"], data["vectors"]
            self.dim = int(matrix.shape[1])
            self._vectors = {str(k): matrix[i] for i, k in enumerate(keys)}
        except (OSError, ValueError, KeyError, IndexError):
            # No cache yet (or an unreadable one, rebuilt on save): the model is needed anyway.
            self.dim = self._model().dim

    def _model(self) -> Embedder:
        if self._inner is None:
            self._inner = self._load()
            if self._inner.model_id != self.model_id:
                raise ValueError(f"model {self._inner.model_id} is not {self.model_id}")
        return self._inner

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Vectors of ``texts``; texts not cached yet are embedded in one batch and saved."""
        return self._embed(texts, False)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Vectors of texts searched with (cached apart where the model's sides differ)."""
        return self._embed(texts, self.queries_differ)

    def _embed(self, texts: list[str], query: bool) -> Vectors:
        keys = [_key("query: " + t) if query else _key(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True)
                          if k not in self._vectors}.items())
        if missing:
            model = self._model()
            embed = (lambda batch: embed_queries(model, batch)) if query else model.embed_batch
            fresh = embed([t for _, t in missing])
            for (k, _), vec in zip(missing, fresh, strict=True):
                self._vectors[k] = np.asarray(vec, dtype=np.float32)
            self.misses += len(missing)
            self._save()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U64")
        matrix = np.stack(list(self._vectors.values())).astype(np.float32)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, keys=keys, vectors=matrix)
        os.replace(tmp, self.path)


def model_embedder(
    folder: Path, cache_dir: Path | None = None, encoder: str = "auto"
) -> DiskCachedEmbedder:
    """The model in ``folder`` (verified on first use) behind the on-disk cache.

    Each encoder keeps its own cache file, so a run with ``onnx`` and one with ``torch`` each
    rank with their own vectors (their figures are compared in docs/benchmarks.md).
    """
    from semmem.embedding.choice import open_model
    from semmem.embedding.files import load_spec, resolve_encoder

    spec = load_spec(folder)
    name = resolve_encoder(folder, encoder)
    return DiskCachedEmbedder(
        spec.model_id, lambda: open_model(folder, name), cache_dir,
        variant="" if name == "torch" else f"+{name}",
        queries_differ=spec.format == "e5-q4",
    )
