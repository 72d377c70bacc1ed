"""Lexical evidence: tokens, the light stemmer and the BM25 index."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

import numpy as np
import pytest

from semmem.ranking.lexical import (
    QUESTION_WORDS,
    STOPWORDS,
    Bm25Index,
    stem,
    term_counts,
    tokens,
)


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








# Small multilingual fixtures (written for these tests): facts, and a question for one of them.
CHINESE = ["我女儿每周六上午去学钢琴。", "我哥哥在上海一家银行工作。", "下个月我要去成都出差。"]


def test_tokens_cut_unspaced_scripts_into_character_pairs() -> None:
    assert tokens("学钢琴") == ["学钢", "钢琴"]
    assert tokens("在 上 海") == ["在", "上", "海"]  # a lone character is its own token
    assert tokens("東京に住む") == ["東京", "京に", "に住", "住む"]
    assert tokens("Meeting 明天 at 9") == ["meet", "明天", "9"]


def test_tokens_cut_inflected_alphabets_to_a_prefix() -> None:
    assert tokens("любимый") == tokens("любимого") == ["любим"]
    assert tokens("الأسنان") == tokens("والأسنان") == ["أسنان"]  # article and "and" written on
    assert tokens("любимого", stemming=False) == ["любимого"]


def _latin_tokens(text: str, stemming: bool) -> list[str]:
    """The tokenizer as it was before other scripts had their own paths."""
    out = []
    for tok in re.findall(r"[^\W_]+", text.casefold()):
        if tok in STOPWORDS or tok in QUESTION_WORDS:
            continue
        out.append(stem(tok) if stemming else tok)
    return out


@pytest.mark.parametrize("stemming", [True, False])
def test_english_and_latin_tokens_are_unchanged(stemming: bool) -> None:
    for text in ["Émile's naïve café: camping trips, 2019, the HIKING club & résumés",
                 "When did Caroline go to the LGBTQ support group? She went 7 May 2023.",
                 "Ich wohne seit 2019 in München; Straße, Ærøskøbing, Łódź, São Paulo"]:
        assert tokens(text, stemming=stemming) == _latin_tokens(text, stemming)


def test_scores_find_a_chinese_fact_by_its_words() -> None:
    index = Bm25Index.build(CHINESE)
    raw, best = index.scores("我哥哥在哪家银行工作？")
    assert 0 < raw[1] <= best
    assert raw[0] == raw[2] == 0  # "我" alone and a question's "在哪" match nothing
