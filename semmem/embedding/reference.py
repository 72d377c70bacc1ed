"""The reference encoder: the bundled model on sentence-transformers and torch.

The one module that imports ``torch`` and ``sentence_transformers``. Serving runs the ONNX
encoder; this one is the yardstick its file is verified against and the tracer that exports it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from semmem.embedding.embedder import normalise
from semmem.embedding.files import verify
from semmem.items import Vectors

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
