"""Set-up of the ONNX encoder: export the graph from the pinned weights, verify it by its
outputs, and record the result.

The exported file is trusted by its outputs: :func:`build_onnx` embeds :data:`PROBES` with
the reference encoder and with the new file and refuses it unless every cosine is at least
``PROBE_MIN_COSINE``; the record it writes beside the file is what
:func:`semmem.embedding.files.check_onnx` checks at every start. The model id is unchanged:
the vectors are the same, so stores written with either encoder stay valid.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from semmem.embedding.files import (
    ONNX_NAME,
    PROBE_MIN_COSINE,
    PROBE_NAME,
    check_onnx,
    sha256_file,
    verify,
)
from semmem.embedding.onnx import INPUTS, OnnxEmbedder, tokenizer_of
from semmem.errors import ModelError
from semmem.items import Vectors

OPSET = 17

# What the probe covers: short queries, typical facts, the empty and blank text, whitespace
# sentence-transformers strips, accents, emoji, CJK, digits, code and URLs, and texts past
# tokenizer.json's own 128-token cut and past the model's 256-token limit.
PROBES: tuple[str, ...] = (
    "",
    "   ",
    "hi",
    "x",
    "which units do I prefer?",
    "Prefers metric units",
    "  Lives in Lyon with two cats  ",
    "\tTabs\nand newlines\r\n",
    "Is vegetarian since 2019",
    "What did we decide about the deployment schedule last Tuesday?",
    "The team deploys every Thursday at 16:00 UTC after the integration suite passes.",
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "Émile a mangé trois crêpes à la fraise 🍓 à 12 h 30.",
    "東京に住んでいて、毎朝コーヒーを飲みます。",
    "Мой любимый цвет — зелёный.",
    "Allergic to peanuts; carries an EpiPen (2 × 0.3 mg).",
    "Phone: +44 20 7946 0958, postcode SW1A 1AA",
    "def f(x): return x ** 2  # squares its input",
    "See https://example.org/docs?page=2&lang=en#install for the steps.",
    "ALL CAPS SHOUTING ABOUT THE BUDGET!!!",
    "naïve café résumé coöperate",
    "🙂🙂🙂",
    "Birthday: 1990-04-17. Favourite number: 3.14159.",
    "Asked for a recipe without meat, dairy or gluten, under 30 minutes, for four people.",
    " ".join(f"word{i}" for i in range(60)),
    " ".join(["the quick brown fox jumps over the lazy dog"] * 14),
    " ".join(["memory"] * 130),
    " ".join(["Remember that the quarterly report is due on the first Monday."] * 30),
    "a " * 600,
)



def _export(folder: Path, target: Path) -> None:
    """Trace the reference model (BERT + mean pooling) into an ONNX graph at ``target``."""
    from semmem.embedding.reference import SentenceTransformerEmbedder

    # Two texts of different lengths, so the traced graph takes the padded (masked) path.
    sample = tokenizer_of(verify(folder)).encode_batch(
        ["a short one", "and a somewhat longer text"])
    width = max(len(e.ids) for e in sample)
    rows = {name: [getattr(e, attr) + [0] * (width - len(e.ids)) for e in sample]
            for name, attr in zip(INPUTS, ("ids", "attention_mask", "type_ids"), strict=True)}
    SentenceTransformerEmbedder(folder).export_onnx(target, rows, OPSET)


def _cosines(a: Vectors, b: Vectors) -> list[float]:
    return [float(x) for x in np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))]


def probe(folder: Path, onnx: Path) -> dict[str, Any]:
    """Embed :data:`PROBES` with torch and with ``onnx``, one by one and as one batch."""
    from semmem.embedding.reference import SentenceTransformerEmbedder

    spec = verify(folder)
    reference = SentenceTransformerEmbedder(folder, threads=1)
    candidate = OnnxEmbedder(spec, onnx, threads=1)
    texts = list(PROBES)
    single = _cosines(
        np.vstack([reference.embed_batch([t]) for t in texts]),
        np.vstack([candidate.embed_batch([t]) for t in texts]),
    )
    batch = _cosines(reference.embed_batch(texts), candidate.embed_batch(texts))
    worst = min(range(len(texts)), key=lambda i: min(single[i], batch[i]))
    return {
        "texts": len(texts),
        "texts_sha256": hashlib.sha256(json.dumps(texts).encode()).hexdigest(),
        "threshold": PROBE_MIN_COSINE,
        "min_cosine": min(single + batch),
        "worst_text": texts[worst][:60],
        "cosine_single": [round(c, 9) for c in single],
        "cosine_batch": [round(c, 9) for c in batch],
    }


def build_onnx(folder: Path, *, force: bool = False) -> dict[str, Any]:
    """Export the ONNX file from the pinned weights, probe it and record the result.

    Set-up time only (``semmem model fetch``); no download. A file that already verifies is
    left alone unless ``force``.

    Returns:
        The probe record written to ``onnx-probe.json``.
    Raises:
        ModelError: the export's vectors differ from torch's (nothing is installed then).
    """
    spec = verify(folder)
    if not force:
        try:
            check_onnx(spec)
            existing: dict[str, Any] = json.loads((spec.folder / PROBE_NAME).read_text())
            return existing
        except ModelError:
            pass
    staging = spec.folder / f".{ONNX_NAME}.{os.getpid()}.tmp"
    try:
        _export(spec.folder, staging)
        return install_onnx(spec.folder, staging)
    finally:
        staging.unlink(missing_ok=True)


def install_onnx(folder: Path, candidate: Path) -> dict[str, Any]:
    """Install ``candidate`` as the model's ONNX file if its outputs match torch's.

    Returns:
        The probe record written to ``onnx-probe.json``.
    Raises:
        ModelError: some probe's cosine is below ``PROBE_MIN_COSINE``; the installed file and
            record, if any, are left as they were.
    """
    spec = verify(folder)
    result = probe(spec.folder, candidate)
    if result["min_cosine"] < PROBE_MIN_COSINE:
        raise ModelError(
            f"the ONNX model {candidate.name} differs from torch (cosine "
            f"{result['min_cosine']:.7f} < {PROBE_MIN_COSINE} on {result['worst_text']!r}); "
            "it was not installed"
        )
    record = {
        "model_id": spec.model_id,
        "onnx_file": ONNX_NAME,
        "onnx_sha256": sha256_file(candidate),
        "onnx_bytes": candidate.stat().st_size,
        "min_cosine": result["min_cosine"],
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "exported_with": {"torch": version("torch"), "onnx": version("onnx"), "opset": OPSET},
        "probed_with": {"onnxruntime": version("onnxruntime"),
                        "sentence-transformers": version("sentence-transformers")},
        "probe": result,
    }
    # Record removed first and written last: in between, no record vouches for any file.
    record_path = spec.folder / PROBE_NAME
    record_path.unlink(missing_ok=True)
    shutil.copyfile(candidate, spec.folder / f".{ONNX_NAME}.installing")
    os.replace(spec.folder / f".{ONNX_NAME}.installing", spec.folder / ONNX_NAME)
    staging = record_path.with_suffix(".tmp")
    staging.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    os.replace(staging, record_path)
    return record
