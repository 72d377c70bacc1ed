"""Which encoder runs the bundled model: ONNX Runtime once set-up has verified its file,
else the sentence-transformers reference (``SEMMEM_ENCODER``: auto, onnx, torch)."""

from __future__ import annotations

from pathlib import Path

from semmem.embedding.embedder import Embedder
from semmem.embedding.files import resolve_encoder
from semmem.embedding.reference import SentenceTransformerEmbedder


def open_model(folder: Path, encoder: str = "auto", threads: int | None = None) -> Embedder:
    """The bundled model on the chosen encoder (``auto``: ONNX once set-up has verified it).

    Raises:
        ModelError: files missing or altered, an unknown encoder, or ``onnx`` unverified.
    """
    if resolve_encoder(folder, encoder) == "onnx":
        from semmem.embedding.onnx import OnnxEmbedder

        return OnnxEmbedder.load(folder, threads=threads)
    return SentenceTransformerEmbedder(folder, threads=threads)
