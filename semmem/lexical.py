"""Lexical evidence: a small BM25 index over a snapshot's item texts.

Built once per snapshot (cached on it), so it costs nothing on repeated recalls of an unchanged
partition; the first recall after a write rebuilds it from per-text term counts kept in a
bounded cache (texts rarely change), in a few vectorised passes. Kept in our own code, not in a
LanceDB FTS index, because an FTS index would keep the tokens of forgotten texts in its files
until it is rebuilt.

Tokens are case-folded words without stop words (function words and the words questions are
phrased with, which say nothing about the topic), lightly stemmed so that ``camping``,
``camped`` and ``camps`` meet at ``camp``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_VOWELS = frozenset("aeiouy")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Short English function words: they carry no evidence of topic.
STOPWORDS = _words(
    """a an and are as at be been but by can could did do does doing for from had has have
    he her hers him his how i if in into is it its me my of on or our she so than that the
    their them then there these they this those to too us was we were what when where which
    who whom whose why will with would you your yours about any all also just more most some
    such very s t don now being am up out"""
)
# Words that phrase a request or question ("what kind of…", "would she likely…") rather than
# name its topic; matching them only adds noise.
QUESTION_WORDS = _words(
    """kind kinds type types sort way ways likely might may should shall whats many much
    ever tell know remember please"""
)


def stem(word: str) -> str:
    """A light English suffix stripper (plurals, ``-ing``, ``-ed``, final ``e``/``y``).

    Deliberately conservative: it only has to make inflections of one word meet, applied
    identically to items and queries, never to produce dictionary forms.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        stem_ = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem_) >= 3 and _VOWELS & set(stem_):
            word = stem_
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, planned -> plan
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # hike / hiking / hiked -> hik
    if len(word) > 3 and word.endswith("y"):
        word = word[:-1] + "i"  # family / families -> famili
    return word


def tokens(text: str, *, stemming: bool = True) -> list[str]:
    """Case-folded word tokens of ``text`` without stop and question words, optionally stemmed."""
    out = []
    for tok in _TOKEN.findall(text.casefold()):
        if tok in STOPWORDS or tok in QUESTION_WORDS:
            continue
        out.append(stem(tok) if stemming else tok)
    return out


# The term-count cache holds short texts only, so its size stays bounded: at most
# CACHED_TEXTS × (a 256-character text and its ≤ 128 tokens), ~25 MB for typical facts.
CACHED_TEXTS = 1 << 14
CACHED_TEXT_CHARS = 256


def term_counts(text: str, stemming: bool = True) -> tuple[tuple[str, int], ...]:
    """The distinct tokens of ``text`` with their counts, in first-seen order (cached for short
    texts: a partition's texts are tokenised again only when they change)."""
    if len(text) > CACHED_TEXT_CHARS:
        return _term_counts(text, stemming)
    return _cached_term_counts(text, stemming)


def _term_counts(text: str, stemming: bool) -> tuple[tuple[str, int], ...]:
    return tuple(Counter(tokens(text, stemming=stemming)).items())


_cached_term_counts = lru_cache(maxsize=CACHED_TEXTS)(_term_counts)


@dataclass
class Bm25Index:
    """Inverted index with BM25 weights over a list of documents."""

    postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]
    idf: dict[str, float]
    size: int
    k1: float = 1.2
    stemming: bool = True

    @classmethod
    def build(
        cls, texts: list[str], k1: float = 1.2, b: float = 0.75, *, stemming: bool = True
    ) -> Bm25Index:
        """Index ``texts`` (document i is ``texts[i]``)."""
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(len(texts), dtype=np.float32)
        for i, text in enumerate(texts):
            counts = term_counts(text, stemming)
            for term, tf in counts:
                term_ids.append(vocab.setdefault(term, len(vocab)))
                tfs.append(tf)
            doc_ids.extend([i] * len(counts))
            lengths[i] = sum(tf for _, tf in counts)
        avg = float(lengths.mean()) if len(texts) and lengths.sum() else 1.0
        n_docs = max(len(texts), 1)
        # Entries grouped by term, in document order within a term (a stable sort).
        order = np.argsort(np.array(term_ids, dtype=np.int64), kind="stable")
        terms = np.array(term_ids, dtype=np.int64)[order]
        ids = np.array(doc_ids, dtype=np.int64)[order]
        freq = np.array(tfs, dtype=np.float32)[order]
        df = np.bincount(terms, minlength=len(vocab))
        idf = {term: math.log(1.0 + (n_docs - int(df[t]) + 0.5) / (int(df[t]) + 0.5))
               for term, t in vocab.items()}
        idf32 = np.array(list(idf.values()), dtype=np.float32)
        norm = freq * (k1 + 1) / (freq + k1 * (1 - b + b * lengths[ids] / avg))
        weights = (norm * idf32[terms]).astype(np.float32)
        ends = np.cumsum(df)
        postings = {
            term: (ids[end - count:end], weights[end - count:end])
            for (term, _), end, count in zip(vocab.items(), ends.tolist(), df.tolist(),
                                             strict=True)
        }
        return cls(postings, idf, len(texts), k1, stemming)

    def containing(self, wanted: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
        """Which documents contain a term for which ``wanted`` is true (one pass over the
        vocabulary and the matching postings, not over the texts)."""
        out = np.zeros(self.size, dtype=np.bool_)
        for term, (ids, _) in self.postings.items():
            if wanted(term):
                out[ids] = True
        return out

    def scores(self, query: str) -> tuple[npt.NDArray[np.float32], float]:
        """BM25 score of every document for ``query``, and the query's maximum attainable score.

        The maximum (sum over distinct query terms of idf × (k1+1)) lets callers normalise
        scores independently of the partition.
        """
        out = np.zeros(self.size, dtype=np.float32)
        best = 0.0
        unseen = math.log(1.0 + (self.size + 0.5) / 0.5)
        for term in set(tokens(query, stemming=self.stemming)):
            hit = self.postings.get(term)
            best += self.idf.get(term, unseen) * (self.k1 + 1)
            if hit is not None:
                out[hit[0]] += hit[1]
        return out, best


# Time and "when": English-only cues, used by ranking's time_weight. A fact that says when
# something happened ("last Saturday", "two years ago", "in June", "in 2022") is what a
# when-question needs. Not "may": a verb far more often.
_ASKS_WHEN = re.compile(
    r"^\W*when\b|\bhow long\b|\b(what|which) (year|month|date|day|time|week)\b"
    r"|\bhow (many|much) (years|months|weeks|days|time)\b",
    re.IGNORECASE,
)
TIME_WORDS = _words(
    """yesterday today tonight tomorrow recently last next ago weekend week month year monday
    tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december"""
)


def asks_when(text: str) -> bool:
    """Whether ``text`` asks when something happened or how long it lasted."""
    return _ASKS_WHEN.search(text) is not None


def is_time_term(term: str, *, stemming: bool = True) -> bool:
    """Whether a token (as ``tokens`` gives it) names a time: a time word or a year."""
    if term.isdigit():
        return len(term) == 4
    return term in (_STEMMED_TIME_WORDS if stemming else TIME_WORDS)


def mentions_time(text: str) -> bool:
    """Whether ``text`` names a time: a weekday, a month, a year, or a relative one."""
    return any(is_time_term(t) for t in tokens(text))


_STEMMED_TIME_WORDS = frozenset(stem(w) for w in TIME_WORDS)
