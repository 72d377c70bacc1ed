"""XLM-R's SentencePiece-unigram tokenizer, from the vocabulary in the e5 model file, as the
model's C engine (``e5.c``, ``tok_content``) applies it.

Normalisation is the file's per-code-point map (``str.translate``), then runs of spaces become
one, a leading space (the metaspace, U+2581) is added unless the text starts with one, and every
space becomes the metaspace. The segmentation is the unigram Viterbi (the highest sum of piece
scores, an unknown character scoring the lowest piece score minus 10) on ``tokenizers``' Rust
``Unigram`` model; it fuses runs of unknown characters into one token where the C engine keeps
one per character, so those are split back here. No special tokens are added.
"""

from __future__ import annotations

import re
from typing import Any

from semmem.embedding.e5file import Vocab

META = "\u2581"
_SPACES = re.compile(" {2,}")


class UnigramTokenizer:
    """Texts to content token ids (no ``<s>``/``</s>``), as ``e5.c`` cuts them."""

    def __init__(self, vocab: Vocab) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        self.unk = vocab.unk
        self._table = str.maketrans(vocab.normalise)
        pieces = [(p, float(s)) for p, s in zip(vocab.pieces, vocab.scores.tolist(), strict=True)]
        self._tokenizer: Any = Tokenizer(Unigram(pieces, vocab.unk, False))

    def normalise(self, text: str) -> str:
        """The text the segmentation sees: mapped, spaces collapsed, metaspaces in."""
        mapped = _SPACES.sub(" ", text.translate(self._table))
        if not mapped.startswith(" "):
            mapped = " " + mapped
        return mapped.replace(" ", META)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Each text's content token ids."""
        normalised = [self.normalise(t) for t in texts]
        encodings = self._tokenizer.encode_batch(normalised, add_special_tokens=False)
        out: list[list[int]] = []
        for enc in encodings:
            if self.unk not in enc.ids:
                out.append(list(enc.ids))
                continue
            ids: list[int] = []
            for token, (start, end) in zip(enc.ids, enc.offsets, strict=True):
                # one unknown token per character, as the C engine's Viterbi leaves them
                ids.extend([token] * max(end - start, 1) if token == self.unk else [token])
            out.append(ids)
        return out
