"""The reference encoder: the bundled model on sentence-transformers and torch.

The one module that imports ``torch`` and ``sentence_transformers``, both from the
``reference`` extra (``pip install 'semmem[reference]'``). Serving runs the ONNX encoder; this
one is the yardstick: it made the committed probe reference vectors, and the tests (and
``semmem model verify --probe``, where installed) compare the ONNX file with it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from semmem.embedding.embedder import normalise
from semmem.embedding.files import torch_installed, verify
from semmem.errors import ModelError
from semmem.items import Vectors

MISSING = ("the torch encoder needs the reference extra: pip install 'semmem[reference]' "
           "(serving needs only the ONNX encoder: SEMMEM_ENCODER=onnx, after `semmem model fetch`)")

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TOKENIZERS_PARALLELISM": "false",
}


class SentenceTransformerEmbedder:
    """The bundled sentence-transformers model, loaded from a verified local folder only."""

    encoder = "torch"

    def __init__(self, folder: Path, batch_size: int = 64, threads: int | None = None) -> None:
        if not torch_installed():
            raise ModelError(MISSING)
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
        return normalise(out)
