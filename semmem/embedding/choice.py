"""Which encoder runs the bundled model: ONNX Runtime once set-up has verified its file,
else the sentence-transformers reference (``SEMMEM_ENCODER``: auto, onnx, torch)."""

from __future__ import annotations

from pathlib import Path

from semmem.embedding.embedder import Embedder
from semmem.embedding.files import ModelSpec, check_onnx, resolve_encoder, torch_installed, verify
from semmem.embedding.reference import MISSING, SentenceTransformerEmbedder
from semmem.errors import ModelError


def open_model(folder: Path, encoder: str = "auto", threads: int | None = None) -> Embedder:
    """The bundled model on the chosen encoder (``auto``: ONNX once set-up has verified it).

    Raises:
        ModelError: files missing or altered, an unknown encoder, or ``onnx`` unverified.
    """
    if resolve_encoder(folder, encoder) == "onnx":
        from semmem.embedding.onnx import OnnxEmbedder

        return OnnxEmbedder.load(folder, threads=threads)
    return SentenceTransformerEmbedder(folder, threads=threads)


def check_model(folder: Path, encoder: str = "auto") -> ModelSpec:
    """Check, without loading it, that the chosen encoder can run the model: its files (the
    ONNX encoder needs no weights) and its ONNX record, or the reference extra for torch.

    Raises:
        ModelError: as :func:`open_model` would, with the fix in the message.
    """
    if resolve_encoder(folder, encoder) == "onnx":
        spec = verify(folder, weights=False)
        check_onnx(spec)
        return spec
    if not torch_installed():
        raise ModelError(MISSING)
    return verify(folder)
