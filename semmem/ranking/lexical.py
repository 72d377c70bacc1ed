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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from semmem.store.reads.persistent import Layered

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_VOWELS = frozenset("aeiouy")


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``, as a set."""
    return frozenset(text.split())


# Short English function words: they carry no evidence of topic.
STOPWORDS = word_set(
    """a an and are as at be been but by can could did do does doing for from had has have
    he her hers him his how i if in into is it its me my of on or our she so than that the
    their them then there these they this those to too us was we were what when where which
    who whom whose why will with would you your yours about any all also just more most some
    such very s t don now being am up out"""
)
# Words that phrase a request or question ("what kind of…", "would she likely…") rather than
# name its topic; matching them only adds noise.
QUESTION_WORDS = word_set(
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


# Scripts written without spaces between words (Han, kana, Hangul's particles glued to nouns,
# Thai, Lao, Myanmar, Khmer): a run of them is cut into overlapping character pairs, the
# usual BM25 unit for these scripts without a dictionary ("烤鸭店" → "烤鸭", "鸭店").
_UNSPACED = re.compile(
    "([぀-ヿ㐀-䶿一-鿿豈-﫿가-힯"
    "฀-໿က-႟ក-៿]+)")
# Alphabets with rich inflection that the English stemmer does not know (Cyrillic, Greek,
# Arabic, Hebrew, Indic...): a word is cut to its first letters, a crude stemmer that makes
# "любимый" and "любимого" meet. Latin-script words keep the English path, unchanged.
PREFIX_LETTERS = 5
_LATIN_END = 0x250
# Arabic's article and the one-letter conjunctions and prepositions written onto a word.
_ARABIC_ARTICLE = re.compile("^[وفبكل]?ال(?=..)")


def _unspaced(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def _other_script(word: str, stemming: bool) -> str:
    if not stemming:
        return word
    return _ARABIC_ARTICLE.sub("", word)[:PREFIX_LETTERS]


def _word(tok: str, stemming: bool) -> list[str]:
    """The tokens of one non-ASCII word: character pairs in unspaced scripts, a prefix in
    inflected alphabets, the English path for Latin letters."""
    out: list[str] = []
    for i, part in enumerate(_UNSPACED.split(tok)):
        if not part:
            continue
        if i % 2:  # a run of an unspaced script
            out.extend(_unspaced(part))
        elif all(ord(c) < _LATIN_END for c in part):
            if part not in STOPWORDS and part not in QUESTION_WORDS:
                out.append(stem(part) if stemming else part)
        else:
            out.append(_other_script(part, stemming))
    return out


def tokens(text: str, *, stemming: bool = True) -> list[str]:
    """Case-folded word tokens of ``text`` without stop and question words, optionally stemmed
    (character pairs for scripts without spaces, prefixes for other inflected alphabets)."""
    out = []
    for tok in _TOKEN.findall(text.casefold()):
        if not tok.isascii():
            out.extend(_word(tok, stemming))
            continue
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

Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]


@dataclass(frozen=True, eq=False)
class Bm25Index:
    """Inverted index over a list of documents: per term, the documents holding it (in order)
    and their term frequencies. BM25 weights are computed per query from those and the
    collection's statistics, so a document added, changed or removed updates only its own
    terms (``evolved``) and scores stay exactly those of a fresh build.

    Postings name document slots: slot ``i`` is document ``i`` until documents are removed;
    after that ``slots`` maps each document to its slot (in order), and a removed document's
    slot stays empty until the index is built again.
    """

    terms: Mapping[str, Postings]
    lengths: npt.NDArray[np.float32]  # per slot (0 for an empty one)
    k1: float = 1.2
    b: float = 0.75
    stemming: bool = True
    slots: npt.NDArray[np.int64] | None = None  # document → slot; None: the same

    @property
    def size(self) -> int:
        """How many documents."""
        return len(self.lengths) if self.slots is None else len(self.slots)

    @property
    def empty_slots(self) -> int:
        """Slots of removed documents."""
        return len(self.lengths) - self.size

    @classmethod
    def build(
        cls, texts: Sequence[str], k1: float = 1.2, b: float = 0.75, *, stemming: bool = True
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
        # Entries grouped by term, in document order within a term (a stable sort).
        order = np.argsort(np.array(term_ids, dtype=np.int64), kind="stable")
        ids = np.array(doc_ids, dtype=np.int64)[order]
        freq = np.array(tfs, dtype=np.float32)[order]
        ends = np.cumsum(np.bincount(np.array(term_ids, dtype=np.int64), minlength=len(vocab)))
        starts = ends - np.bincount(np.array(term_ids, dtype=np.int64), minlength=len(vocab))
        terms = {term: (ids[start:end], freq[start:end])
                 for term, start, end in zip(vocab, starts.tolist(), ends.tolist(), strict=True)}
        return cls(terms, lengths, k1, b, stemming)

    def evolved(self, appended: Sequence[str], changed: Mapping[int, tuple[str, str]],
                removed: Mapping[int, str] | None = None) -> Bm25Index:
        """This index with documents ``removed`` cut (document → its text, numbered as
        before), then documents ``changed`` in place (document → (old text, new text),
        numbered after the cut) and ``appended`` at the end. Only the terms of those texts
        are touched (the others are shared with this index)."""
        removed = removed or {}
        update: dict[str, Postings] = {}

        def postings(term: str) -> Postings:
            held = update.get(term)
            return held if held is not None else self.terms.get(term, _EMPTY)

        def drop(slot: int, text: str) -> None:
            for term, _ in term_counts(text, self.stemming):
                ids, freq = postings(term)
                keep = ids != slot
                if not keep.all():
                    update[term] = (ids[keep], freq[keep])

        total = len(self.lengths)
        lengths = np.concatenate([self.lengths, np.zeros(len(appended), np.float32)])
        slots = self.slots
        if removed:
            held = np.arange(total, dtype=np.int64) if slots is None else slots
            for doc, text in removed.items():
                slot = int(held[doc])
                drop(slot, text)
                lengths[slot] = 0
            slots = np.delete(held, sorted(removed))
        if slots is not None and appended:
            slots = np.concatenate([slots, np.arange(total, total + len(appended),
                                                     dtype=np.int64)])
        for doc, (old, new) in sorted(changed.items()):
            if old == new:
                continue
            slot = doc if slots is None else int(slots[doc])
            drop(slot, old)
            counts = term_counts(new, self.stemming)
            for term, tf in counts:
                ids, freq = postings(term)
                at = int(np.searchsorted(ids, slot))
                update[term] = (np.insert(ids, at, slot), np.insert(freq, at, np.float32(tf)))
            lengths[slot] = sum(tf for _, tf in counts)
        for offset, text in enumerate(appended):
            slot = total + offset
            counts = term_counts(text, self.stemming)
            for term, tf in counts:
                ids, freq = postings(term)
                update[term] = (np.append(ids, slot), np.append(freq, np.float32(tf)))
            lengths[slot] = sum(tf for _, tf in counts)
        terms = Layered.over(self.terms, update) if update else self.terms
        return Bm25Index(terms, lengths, self.k1, self.b, self.stemming, slots)

    def _rows(self, per_slot: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return per_slot if self.slots is None else per_slot[self.slots]

    def _idf(self, df: int) -> float:
        return math.log(1.0 + (max(self.size, 1) - df + 0.5) / (df + 0.5))

    def _weights(self, ids: npt.NDArray[np.int64], freq: npt.NDArray[np.float32],
                 avg: float) -> npt.NDArray[np.float32]:
        k1, b = self.k1, self.b
        norm = freq * (k1 + 1) / (freq + k1 * (1 - b + b * self.lengths[ids] / avg))
        weights: npt.NDArray[np.float32] = (norm * np.float32(self._idf(len(ids)))
                                            ).astype(np.float32)
        return weights

    @cached_property
    def _average(self) -> float:
        lengths = self._rows(self.lengths)  # the documents' lengths in order, as built
        return float(lengths.mean()) if self.size and lengths.sum() else 1.0

    def _avg(self) -> float:
        return self._average

    @property
    def postings(self) -> dict[str, Postings]:
        """Every term's documents and BM25 weights (for inspection and tests)."""
        avg = self._avg()
        out = {}
        for term, (ids, freq) in self.terms.items():
            if len(ids):
                docs = ids if self.slots is None else np.searchsorted(self.slots, ids)
                out[term] = (docs.astype(np.int64), self._weights(ids, freq, avg))
        return out

    def containing(self, wanted: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
        """Which documents contain a term for which ``wanted`` is true (one pass over the
        vocabulary and the matching postings, not over the texts)."""
        out = np.zeros(len(self.lengths), dtype=np.bool_)
        for term, (ids, _) in self.terms.items():
            if wanted(term):
                out[ids] = True
        found: npt.NDArray[np.bool_] = self._rows(out)
        return found

    def scores(self, query: str) -> tuple[npt.NDArray[np.float32], float]:
        """BM25 score of every document for ``query``, and the query's maximum attainable score.

        The maximum (sum over distinct query terms of idf × (k1+1)) lets callers normalise
        scores independently of the partition.
        """
        out = np.zeros(len(self.lengths), dtype=np.float32)
        best = 0.0
        unseen = math.log(1.0 + (self.size + 0.5) / 0.5)
        avg = self._avg()
        for term in set(tokens(query, stemming=self.stemming)):
            hit = self.terms.get(term)
            if hit is not None and len(hit[0]):
                best += self._idf(len(hit[0])) * (self.k1 + 1)
                out[hit[0]] += self._weights(hit[0], hit[1], avg)
            else:
                best += unseen * (self.k1 + 1)
        scored: npt.NDArray[np.float32] = self._rows(out)
        return scored, best


_EMPTY: tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] = (
    np.zeros(0, np.int64), np.zeros(0, np.float32))
