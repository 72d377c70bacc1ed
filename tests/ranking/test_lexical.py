"""Lexical evidence: tokens, the light stemmer and the BM25 index."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from semmem.ranking.lexical import Bm25Index, stem, term_counts, tokens


@pytest.mark.parametrize(
    "forms",
    [
        ("camp", "camps", "camped", "camping"),
        ("hike", "hikes", "hiked", "hiking"),
        ("run", "runs", "running"),
        ("paint", "paints", "painted", "painting"),
        ("family", "families"),
        ("study", "studies", "studied", "studying"),
        ("class", "classes"),
    ],
)
def test_stem_inflections_meet(forms: tuple[str, ...]) -> None:
    assert len({stem(f) for f in forms}) == 1


@pytest.mark.parametrize("word", ["bus", "analysis", "ok", "2023", "3d", "gas"])
def test_stem_short_or_non_alphabetic_words_unchanged(word: str) -> None:
    assert stem(word) == word


def test_tokens_drop_stop_and_question_words() -> None:
    assert tokens("What kind of MUSIC would Maya likely want?") == ["music", "maya", "want"]


def test_tokens_split_on_punctuation_and_possessives() -> None:
    assert tokens("Maya's cat, Pixel (8 years)") == ["maya", "cat", "pixel", "8", "year"]


def test_tokens_without_stemming_keep_inflections() -> None:
    assert tokens("hiking trips", stemming=False) == ["hiking", "trips"]


def test_scores_rank_the_matching_document_first() -> None:
    index = Bm25Index.build([
        "Maya plays bass in a jazz trio",
        "Maya runs every Saturday",
        "Tom works night shifts",
    ])
    raw, best = index.scores("Which jazz band does she play in?")
    assert int(np.argmax(raw)) == 0
    assert raw[1] == 0 and raw[2] == 0
    assert 0 < raw[0] <= best


def test_scores_stemmed_query_meets_inflected_document() -> None:
    index = Bm25Index.build(["We went camping in the mountains", "A quiet evening at home"])
    raw, _ = index.scores("camp trip")
    assert raw[0] > 0 and raw[1] == 0


def test_scores_rarer_term_weighs_more() -> None:
    index = Bm25Index.build(["maya cat", "maya dog", "maya fish", "tom cat"])
    raw, _ = index.scores("maya")
    rare, _ = index.scores("dog")
    assert rare[1] > raw[1] > 0


def test_scores_best_counts_unknown_terms_as_rarest() -> None:
    index = Bm25Index.build(["alpha beta", "beta gamma"], k1=1.2)
    raw, best = index.scores("zeta")
    assert not raw.any()
    assert best == pytest.approx(math.log(1 + 2.5 / 0.5) * 2.2)


def test_build_empty_index_scores_nothing() -> None:
    index = Bm25Index.build([])
    raw, best = index.scores("anything at all")
    assert raw.shape == (0,)
    assert best > 0


def _reference_postings(texts: list[str], k1: float, b: float, stemming: bool
                        ) -> dict[str, tuple[list[int], list[float]]]:
    """BM25 weights term by term, the textbook way (float64), for comparison."""
    docs = [Counter(tokens(t, stemming=stemming)) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    avg = (sum(lengths) / len(docs)) if docs and sum(lengths) else 1.0
    n = max(len(docs), 1)
    out: dict[str, tuple[list[int], list[float]]] = {}
    for term in sorted({t for d in docs for t in d}):
        ids = [i for i, d in enumerate(docs) if term in d]
        idf = math.log(1 + (n - len(ids) + 0.5) / (len(ids) + 0.5))
        out[term] = (ids, [idf * docs[i][term] * (k1 + 1)
                           / (docs[i][term] + k1 * (1 - b + b * lengths[i] / avg)) for i in ids])
    return out


@pytest.mark.parametrize(("k1", "b", "stemming"), [(1.2, 0.75, True), (0.9, 0.0, False),
                                                    (2.0, 1.0, True)])
def test_build_matches_textbook_bm25(k1: float, b: float, stemming: bool) -> None:
    rng = random.Random(3)
    words = ["camping", "camp", "tea", "green", "Porto", "sister", "ünïcode", "名前", "dog", "the"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 9))) for _ in range(300)]
    texts += ["", "the and of", "tea tea tea tea"]
    index = Bm25Index.build(texts, k1, b, stemming=stemming)
    expected = _reference_postings(texts, k1, b, stemming)
    assert sorted(index.postings) == sorted(expected)
    for term, (ids, weights) in expected.items():
        got_ids, got_weights = index.postings[term]
        assert got_ids.tolist() == ids
        assert got_weights.dtype == np.float32
        np.testing.assert_allclose(got_weights, weights, rtol=1e-5)
    raw, _ = index.scores("green tea camping trip")
    manual = np.zeros(len(texts))
    for term in set(tokens("green tea camping trip", stemming=stemming)):
        for i, w in zip(*expected.get(term, ([], [])), strict=True):
            manual[i] += w
    np.testing.assert_allclose(raw, manual, rtol=1e-5)


def test_term_counts_cache_keeps_stemming_apart() -> None:
    assert term_counts("Camping camps", True) == (("camp", 2),)
    assert term_counts("Camping camps", False) == (("camping", 1), ("camps", 1))






