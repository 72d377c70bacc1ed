"""The query's wording: asking when, and facts that name a time."""

from __future__ import annotations

import pytest

from semmem.ranking.cues import asks_when, mentions_time


@pytest.mark.parametrize("text", [
    "When did Ana start pottery?", "  when is the trip", "How long has Ben had Rex?",
    "What year did they move?", "How many years ago was that?",
])
def test_asks_when(text: str) -> None:
    assert asks_when(text)


@pytest.mark.parametrize("text", [
    "What did Ana make?", "Where is the whenua?", "Which book did she read?",
    "What's the time complexity of quicksort?",
])
def test_asks_when_not(text: str) -> None:
    assert not asks_when(text)


def test_mentions_time() -> None:
    assert mentions_time("Ben ran a race last Saturday.")
    assert mentions_time("They moved in 2019.")
    assert mentions_time("Ana started pottery two weeks ago")
    assert not mentions_time("Ana may like pottery.")  # "may" is a verb far more often
    assert not mentions_time("Ben walks Rex twice a day.")
