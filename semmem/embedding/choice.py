"""Which encoder runs the bundled model: ONNX Runtime once set-up has verified its file,
else the sentence-transformers reference (``SEMMEM_ENCODER``: auto, onnx, torch)."""

from __future__ import annotations

from pathlib import Path

from semmem.embedding.embedder import Embedder
from semmem.embedding.files import (
    ModelSpec,
    check_onnx,
    load_spec,
    resolve_encoder,
    torch_installed,
    verify,
)
from semmem.embedding.reference import MISSING, SentenceTransformerEmbedder
from semmem.errors import ModelError


def open_model(folder: Path, encoder: str = "auto", threads: int | None = None) -> Embedder:
    """The bundled model on the chosen encoder (``auto``: ONNX once set-up has verified it).

    Raises:
        ModelError: files missing or altered, an unknown encoder, or ``onnx`` unverified.
    """
    if _e5(folder, encoder):
        from semmem.embedding.e5 import E5Embedder

        return E5Embedder.load(folder, threads=threads)
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
    if _e5(folder, encoder) or resolve_encoder(folder, encoder) == "onnx":
        spec = verify(folder, weights=False)
        check_onnx(spec)
        return spec
    if not torch_installed():
        raise ModelError(MISSING)
    return verify(folder)


def _e5(folder: Path, encoder: str) -> bool:
    """Whether the folder holds the 4-bit e5 model, which runs on ONNX Runtime only.

    Raises:
        ModelError: the folder is not in the manifest, or ``torch`` is asked of e5.
    """
    if load_spec(folder).format != "e5-q4":
        return False
    if resolve_encoder(folder, encoder) == "torch" and encoder == "torch":
        raise ModelError(f"{folder.name} runs on ONNX Runtime only (SEMMEM_ENCODER=onnx or auto)")
    return True
