"""The query's wording: asking when, facts that name a time, questions that name only a
time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from semmem.ranking.calendar import named
from semmem.ranking.cues import asks_when, mentions_time, names_only_time

NOW = int(datetime(2023, 5, 30, 15, 0, tzinfo=UTC).timestamp() * 1000)


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


def only_time(text: str) -> bool:
    return names_only_time(text, [found.phrase for found in named(text, NOW)])


@pytest.mark.parametrize("text", [
    "What did I say in October?", "What did I say a month ago?",
    "what did we talk about six weeks ago", "Remind me what we discussed last summer.",
    "What did I tell you last Tuesday?", "Anything we chatted about   yesterday?",
    "What happened last week?", "What did we talk about back in March 2022?",
    "What was I doing a few days ago?",
])
def test_a_question_that_names_only_a_time(text: str) -> None:
    assert only_time(text)


@pytest.mark.parametrize("text", [
    "What did I say about my knee in October?",  # a topic as well
    "Who did I go hiking with two weeks ago?",
    "What did I say?",  # no time at all
    "What did I say in the meeting?",  # no time named
    "What did I eat last night?",
])
def test_a_question_that_names_more_than_a_time(text: str) -> None:
    assert not only_time(text)
