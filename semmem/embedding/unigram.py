"""XLM-R's SentencePiece-unigram tokenizer, from the vocabulary in the e5 model file, as the
model's C engine (``e5.c``, ``tok_content``) applies it, in plain Python.

Normalisation is the file's per-code-point map (``str.translate``), then runs of spaces become
one, a leading space (the metaspace, U+2581) is added unless the text starts with one, and every
space becomes the metaspace. The segmentation is the unigram Viterbi: the highest sum of piece
scores, an unknown character scoring the lowest piece score minus 10 (one unknown token per
character), ties going to the first path found, in the engine's order. Plain Python rather
than ``tokenizers``' Rust ``Unigram``: that one's trie of 250,002 pieces held 260 MB here,
this dictionary ~40 MB; a query's text takes well under a millisecond. No special tokens.
"""

from __future__ import annotations

import re

from semmem.embedding.e5file import Vocab

META = "\u2581"
_SPACES = re.compile(" {2,}")
_UNK_PENALTY = 10.0


class UnigramTokenizer:
    """Texts to content token ids (no ``<s>``/``</s>``), as ``e5.c`` cuts them."""

    def __init__(self, vocab: Vocab) -> None:
        self.unk = vocab.unk
        self._table = str.maketrans(vocab.normalise)
        scores = vocab.scores.tolist()
        self._pieces: dict[str, tuple[int, float]] = {
            piece: (i, scores[i]) for i, piece in enumerate(vocab.pieces) if i != vocab.unk}
        self._unk_score = min(scores) - _UNK_PENALTY
        # The lengths (in characters, ascending) of the pieces opening with each two characters:
        # a position tries those lengths only, not every length up to the longest piece.
        lengths: dict[str, set[int]] = {}
        for piece in self._pieces:
            if len(piece) > 1:
                lengths.setdefault(piece[:2], set()).add(len(piece))
        self._lengths = {head: tuple(sorted(found)) for head, found in lengths.items()}

    def normalise(self, text: str) -> str:
        """The text the segmentation sees: mapped, spaces collapsed, metaspaces in."""
        mapped = _SPACES.sub(" ", text.translate(self._table))
        if not mapped.startswith(" "):
            mapped = " " + mapped
        return mapped.replace(" ", META)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Each text's content token ids."""
        return [self._viterbi(self.normalise(t)) for t in texts]

    def _viterbi(self, s: str) -> list[int]:
        n = len(s)
        best = [float("-inf")] * (n + 1)
        best[0] = 0.0
        back = [(0, self.unk)] * (n + 1)
        pieces, lengths, unk_score = self._pieces, self._lengths, self._unk_score
        for i in range(n):
            here = best[i]
            for length in (1, *lengths.get(s[i:i + 2], ())):  # ascending, as e5.c tries them
                e = i + length
                if e > n:
                    break
                hit = pieces.get(s[i:e])
                if hit is not None and here + hit[1] > best[e]:
                    best[e], back[e] = here + hit[1], (i, hit[0])
            if here + unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = here + unk_score, (i, self.unk)
        out: list[int] = []
        at = n
        while at > 0:
            at, piece = back[at]
            out.append(piece)
        out.reverse()
        return out
