"""The bundled model on ONNX Runtime, and the set-up step that exports and verifies it.

The only module that imports ``onnxruntime``; torch stays in ``semmem.embedder``, whose
reference encoder traces itself for the export. At run time the ONNX encoder needs no torch at
all: the model's own ``tokenizer.json`` through ``tokenizers``, the exported graph (BERT plus the
mean pooling of sentence-transformers) through ``onnxruntime``, and an L2 norm in numpy.

The exported file is trusted by its outputs: :func:`build_onnx` embeds :data:`PROBES` with
torch and with the new file and refuses it unless every cosine is at least
``PROBE_MIN_COSINE``; the record it writes beside the file is what
:func:`semmem.modelfiles.check_onnx` checks at every start. The model id is unchanged: the
vectors are the same, so stores written with either encoder stay valid.
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
import numpy.typing as npt

from semmem.embedder import Vectors, _normalise
from semmem.errors import ModelError
from semmem.modelfiles import (
    ONNX_NAME,
    PROBE_MIN_COSINE,
    PROBE_NAME,
    ModelSpec,
    check_onnx,
    sha256_file,
    verify,
)

OPSET = 17
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

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


def _tokenizer(spec: ModelSpec) -> Any:
    """The model's fast tokenizer with sentence-transformers' limit and no fixed padding.

    ``tokenizer.json`` itself truncates and pads to 128 tokens; sentence-transformers reads the
    limit from ``sentence_bert_config.json`` (256 here) and pads to the longest text.
    """
    from tokenizers import Tokenizer

    config = json.loads((spec.folder / "sentence_bert_config.json").read_text())
    tokenizer = Tokenizer.from_file(str(spec.folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(config["max_seq_length"]))
    tokenizer.no_padding()
    return tokenizer


class OnnxEmbedder:
    """The bundled model's exported graph on ONNX Runtime.

    Queries and small batches run on a one-thread session: on a server the other core is the
    event loop's, and recall throughput under concurrency is highest that way. Batches larger
    than ``batch_size`` (import, reindex) run on a second session, created on first use, with
    one thread per core, which embeds them ~1.5–1.9× faster on an idle machine. ``threads``
    fixes one count for both (``SEMMEM_TORCH_THREADS``).
    """

    encoder = "onnx"

    def __init__(self, spec: ModelSpec, onnx: Path, *, threads: int | None = None,
                 batch_size: int = 32) -> None:
        """Run ``onnx`` for the model of ``spec``; :meth:`load` is the checked way in."""
        self._onnx = onnx
        self._session = self._open(threads or 1)
        self._bulk_session: Any = self._session if threads else None
        self._tokenizer = _tokenizer(spec)
        self.model_id = spec.model_id
        self.dim = int(self._session.get_outputs()[0].shape[-1])
        self.batch_size = batch_size
        self.threads = threads or 1

    def _open(self, threads: int) -> Any:
        """A session with ``threads`` intra-op threads (0: one per physical core)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads would spin on the cores the event loop and the other requests
        # need; the model thread hands work over in bursts, so waking them costs little.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self._onnx), options,
                                    providers=["CPUExecutionProvider"])

    @classmethod
    def load(cls, folder: Path, threads: int | None = None) -> OnnxEmbedder:
        """The verified folder's ONNX file, if its probe record vouches for it.

        Raises:
            ModelError: a model file is missing or altered, or the ONNX file is unverified.
        """
        spec = verify(folder)
        return cls(spec, check_onnx(spec), threads=threads)

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts``: sorted by length and run in batches, so little is padding."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # sentence-transformers strips each text before tokenising
        encodings = self._tokenizer.encode_batch([t.strip() for t in texts])
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")
        session = self._session
        if len(texts) > self.batch_size:
            if self._bulk_session is None:
                self._bulk_session = self._open(0)
            session = self._bulk_session
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._run(session, [encodings[i] for i in rows],
                                  int(lengths[rows].max()))
        return _normalise(out)

    @staticmethod
    def _run(session: Any, encodings: list[Any], width: int) -> npt.NDArray[np.float32]:
        feeds = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in _INPUTS}
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            feeds["input_ids"][row, :n] = enc.ids
            feeds["attention_mask"][row, :n] = enc.attention_mask
            feeds["token_type_ids"][row, :n] = enc.type_ids
        pooled: npt.NDArray[np.float32] = session.run(None, feeds)[0]
        return pooled


# --- set-up: export from the pinned weights, verify by outputs, record -----------------------


def _export(folder: Path, target: Path) -> None:
    """Trace the reference model (BERT + mean pooling) into an ONNX graph at ``target``."""
    from semmem.embedder import SentenceTransformerEmbedder

    # Two texts of different lengths, so the traced graph takes the padded (masked) path.
    sample = _tokenizer(verify(folder)).encode_batch(["a short one", "and a somewhat longer text"])
    width = max(len(e.ids) for e in sample)
    rows = {name: [getattr(e, attr) + [0] * (width - len(e.ids)) for e in sample]
            for name, attr in zip(_INPUTS, ("ids", "attention_mask", "type_ids"), strict=True)}
    SentenceTransformerEmbedder(folder).export_onnx(target, rows, OPSET)


def _cosines(a: Vectors, b: Vectors) -> list[float]:
    return [float(x) for x in np.einsum("ij,ij->i", a.astype(np.float64), b.astype(np.float64))]


def probe(folder: Path, onnx: Path) -> dict[str, Any]:
    """Embed :data:`PROBES` with torch and with ``onnx``, one by one and as one batch."""
    from semmem.embedder import SentenceTransformerEmbedder

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
