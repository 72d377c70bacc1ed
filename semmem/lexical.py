"""Lexical evidence: a small BM25 index over a snapshot's item texts.

Built once per snapshot (cached on it), so it costs nothing on repeated recalls of an unchanged
partition. Kept in our own code, not in a LanceDB FTS index, because an FTS index would keep
the tokens of forgotten texts in its files until it is rebuilt.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# Short English function words: they carry no evidence of topic.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing for from had has have
    he her hers him his how i if in into is it its me my of on or our she so than that the
    their them then there these they this those to too us was we were what when where which
    who whom why will with would you your yours about any all also just more most some such
    very s t don now being am up out""".split()
)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words, lightly stemmed (plural ``s``)."""
    out = []
    for tok in _TOKEN.findall(text.casefold()):
        if tok in STOPWORDS:
            continue
        if len(tok) > 4 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
    return out


@dataclass
class Bm25Index:
    """Inverted index with BM25 weights over a list of documents."""

    postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]
    idf: dict[str, float]
    size: int

    @classmethod
    def build(cls, texts: list[str], k1: float = 1.2, b: float = 0.75) -> Bm25Index:
        """Index ``texts`` (document i is ``texts[i]``)."""
        docs = [Counter(tokens(t)) for t in texts]
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float32)
        avg = float(lengths.mean()) if len(docs) and lengths.sum() else 1.0
        rows: dict[str, list[tuple[int, float]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in doc.items():
                rows.setdefault(term, []).append((i, float(tf)))
        n_docs = max(len(docs), 1)
        postings = {}
        idf = {}
        for term, entries in rows.items():
            df = len(entries)
            idf[term] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            ids = np.array([e[0] for e in entries], dtype=np.int64)
            tf = np.array([e[1] for e in entries], dtype=np.float32)
            norm = tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[ids] / avg))
            postings[term] = (ids, (norm * idf[term]).astype(np.float32))
        return cls(postings, idf, len(docs))

    def scores(self, query: str) -> tuple[npt.NDArray[np.float32], float]:
        """BM25 score of every document for ``query``, and the query's maximum attainable score.

        The maximum (sum over distinct query terms of idf × (k1+1)) lets callers normalise
        scores to [0, 1] independently of the partition.
        """
        out = np.zeros(self.size, dtype=np.float32)
        best = 0.0
        for term in set(tokens(query)):
            hit = self.postings.get(term)
            weight = self.idf.get(term, math.log(1.0 + (self.size + 0.5) / 0.5))
            best += weight * 2.2
            if hit is not None:
                out[hit[0]] += hit[1]
        return out, best
