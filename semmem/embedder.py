"""Embedding models: one small interface and the sentence-transformers implementation (the
reference encoder); ``semmem.encoders`` chooses between it and ``semmem.onnx_encoder``.

With ``semmem.onnx_encoder``, the only module that imports ``sentence_transformers`` or
``torch``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from semmem.modelfiles import verify

Vectors = npt.NDArray[np.float32]

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    model_id: str
    dim: int

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts``; returns an array of shape ``(len(texts), dim)``, rows of norm 1."""
        ...


def _normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)


class SentenceTransformerEmbedder:
    """The bundled sentence-transformers model, loaded from a verified local folder only."""

    encoder = "torch"

    def __init__(self, folder: Path, batch_size: int = 64, threads: int | None = None) -> None:
        spec = verify(folder)  # raises ModelError with the fix when files are missing/altered
        for key, value in _OFFLINE_ENV.items():
            os.environ.setdefault(key, value)
        # Offline is enforced by the code, not only the environment: the hub variables are
        # read at import, so they are set above; loading uses a local path and
        # local_files_only, and nothing here names a hub repository.
        import torch
        from sentence_transformers import SentenceTransformer

        if threads:
            torch.set_num_threads(threads)
        self._model = SentenceTransformer(
            str(spec.folder), device="cpu", local_files_only=True, trust_remote_code=False
        )
        self._lock = threading.Lock()
        self._torch = torch
        self.model_id = spec.model_id
        dim_of = getattr(self._model, "get_embedding_dimension", None)
        dim = dim_of() if dim_of else self._model.get_sentence_embedding_dimension()
        if dim is None:
            dim = int(self._model.encode(["x"]).shape[1])
        self.dim = int(dim)
        self.batch_size = batch_size

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts`` in batches on the CPU."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock, self._torch.inference_mode():
            out = self._model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return _normalise(out)

    def export_onnx(self, target: Path, sample: dict[str, list[list[int]]], opset: int) -> None:
        """Trace the model (BERT + mean pooling, the vectors before the L2 norm) into an ONNX
        graph at ``target``, from ``sample``'s token rows (input name → padded rows; two texts
        of different lengths, so the traced graph takes the padded, masked path). The set-up
        of the ONNX encoder calls this: torch is imported here and nowhere else."""
        import warnings

        import torch

        bert: Any = self._model[0].auto_model

        class Pooled(torch.nn.Module):
            """BERT's last hidden state averaged over the real tokens, as Pooling does."""

            def __init__(self) -> None:
                super().__init__()
                self.bert = bert

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                   token_type_ids=token_type_ids).last_hidden_state
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

        names = list(sample)
        args = tuple(torch.tensor(sample[name]) for name in names)
        axes = {name: {0: "batch", 1: "tokens"} for name in names}
        # The tracer warns about branches it fixes at trace time (padding, causal masks); the
        # caller's probe checks what matters, that the graph gives these vectors on any input.
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Pooled().eval(), args, str(target), input_names=names,
                output_names=["embedding"], dynamic_axes={**axes, "embedding": {0: "batch"}},
                opset_version=opset, dynamo=False,
            )


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
        return _normalise(out)


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
