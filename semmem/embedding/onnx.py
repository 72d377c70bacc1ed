"""The bundled model on ONNX Runtime: the serving encoder.

It needs no torch and no ``onnx``: the model's own ``tokenizer.json`` through ``tokenizers``,
the graph built at set-up (BERT plus the mean pooling of sentence-transformers, see
``semmem.embedding.graph``) through ``onnxruntime``, and an L2 norm in numpy. The file is
trusted by its probe record (``semmem.embedding.export``), checked at every load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from semmem.embedding.calls import current, in_bulk
from semmem.embedding.embedder import normalise
from semmem.embedding.files import (
    ModelSpec,
    check_onnx,
    verify,
)
from semmem.items import Vectors

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# A text longer than this is tokenised by its head only (``head_encoding``): 256 tokens of
# English prose cover about 1,100 characters, so the first head almost always holds them.
HEAD_CHARS = 4096
SPACES = (" ", "\n", "\t", "\r")

def tokenizer_of(spec: ModelSpec) -> Any:
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


def run_options() -> Any:
    """Options for one ``session.run``: stopped between the graph's nodes when the model
    call it is part of is stopped (``embedding.calls``: nobody awaits its vectors)."""
    import onnxruntime as ort

    options = ort.RunOptions()
    interrupt = current()
    if interrupt is not None:
        interrupt.on_stop(lambda: setattr(options, "terminate", True))
    return options


class OnnxEmbedder:
    """The bundled model's exported graph on ONNX Runtime.

    Queries and small batches run on a one-thread session: on a server the other core is the
    event loop's, and recall throughput under concurrency is highest that way. Batches larger
    than ``batch_size`` (import, reindex; through the model queue, a call of a job that
    large: ``embedding.calls.in_bulk``) run on a second session, created on first use, with
    one thread per core, which embeds them ~1.5–1.9× faster on an idle machine. ``threads``
    fixes one count for both (``SEMMEM_TORCH_THREADS``).
    """

    encoder = "onnx"
    # The model queue's budget for one call: ~32 texts of 512 characters, a sixth of a second
    # of one core for MiniLM (its 256 tokens of each); e5 sets one window's.
    call_chars = 16 * 1024

    def __init__(self, spec: ModelSpec, onnx: Path, *, threads: int | None = None,
                 batch_size: int = 32) -> None:
        """Run ``onnx`` for the model of ``spec``; :meth:`load` is the checked way in."""
        self._onnx = onnx
        self._session = self._open(threads or 1)
        self._bulk_session: Any = self._session if threads else None
        self._tokenizer = tokenizer_of(spec)
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
        spec = verify(folder, weights=False)
        return cls(spec, check_onnx(spec), threads=threads)

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed ``texts``: sorted by length and run in batches, so little is padding."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._encode(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")
        session = self._session
        if len(texts) > self.batch_size or in_bulk():
            if self._bulk_session is None:
                self._bulk_session = self._open(0)
            session = self._bulk_session
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            rows = order[start:start + self.batch_size]
            out[rows] = self._run(session, [encodings[i] for i in rows],
                                  int(lengths[rows].max()))
        return normalise(out)

    def _encode(self, texts: list[str]) -> list[Any]:
        """Each text's tokens within the window, as the whole text's would be, tokenising
        only the head of a long one (``head_encoding``)."""
        # sentence-transformers strips each text before tokenising
        stripped = [t.strip() for t in texts]
        short = [i for i, t in enumerate(stripped) if len(t) <= HEAD_CHARS]
        out: list[Any] = [None] * len(texts)
        for i, enc in zip(short, self._tokenizer.encode_batch([stripped[i] for i in short]),
                          strict=True):
            out[i] = enc
        for i, text in enumerate(stripped):
            if out[i] is None:
                out[i] = head_encoding(self._tokenizer, text)
        return out

    @staticmethod
    def _run(session: Any, encodings: list[Any], width: int) -> npt.NDArray[np.float32]:
        feeds = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            feeds["input_ids"][row, :n] = enc.ids
            feeds["attention_mask"][row, :n] = enc.attention_mask
            feeds["token_type_ids"][row, :n] = enc.type_ids
        pooled: npt.NDArray[np.float32] = session.run(None, feeds, run_options())[0]
        return pooled


def head_encoding(tokenizer: Any, text: str) -> Any:
    """``text``'s encoding within the window, tokenising only a head of it: cut at a space
    (the BERT tokenizer's pieces never span one, and its normaliser works per character, so a
    head's tokens are the whole text's first ones), doubled until its tokens overflow the
    window (then the window is the whole text's) or it is the whole text. Cost grows with
    the window, not the text: a 4 MB query took 2.1 s to tokenise whole for 256 ids kept.
    Where a head has no space to cut at, it is cut in a word (a run of more than 100
    characters without a space: one unknown token either way, unless the cut leaves less)."""
    size = HEAD_CHARS
    while size < len(text):
        space = max(text.rfind(c, size // 2, size) for c in SPACES)
        enc = tokenizer.encode(text[:space if space > 0 else size])
        if enc.overflowing:
            return enc
        size *= 2
    return tokenizer.encode(text)
