"""Relative dates in a question placed on the calendar (``semmem.ranking.calendar``), counted
from a fixed now: a Tuesday afternoon, 2023-05-30 15:00 UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from semmem.ranking.calendar import inside, named, windows

NOW = int(datetime(2023, 5, 30, 15, 0, tzinfo=UTC).timestamp() * 1000)


def at(day: str, hour: int = 12) -> int:
    """Epoch ms of ``day`` (ISO date) at ``hour`` UTC."""
    return int(datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC).timestamp() * 1000)


def covers(text: str, day: str, hour: int = 12) -> bool:
    return any(start <= at(day, hour) <= end for start, end in windows(text, NOW))


@pytest.mark.parametrize(("text", "inside_days", "outside_days"), [
    ("What did I plant two weeks ago?", ["2023-05-16", "2023-05-14", "2023-05-19"],
     ["2023-05-09", "2023-05-23"]),
    ("the milestone I mentioned 4 weeks ago", ["2023-05-02"], ["2023-05-16"]),
    ("Who did I go with to the concert last Saturday?", ["2023-05-27"], ["2023-05-20"]),
    ("what I ate yesterday", ["2023-05-29"], ["2023-05-27"]),
    ("last week's meetings", ["2023-05-22", "2023-05-28"], ["2023-05-15", "2023-05-30"]),
    ("How many plants did I buy in the last month?", ["2023-05-02", "2023-05-29"],
     ["2023-04-20"]),
    ("what I spent last month", ["2023-04-15"], ["2023-05-15", "2023-03-15"]),
    ("this week", ["2023-05-29"], ["2023-05-26"]),
    ("the past three days", ["2023-05-28"], ["2023-05-24"]),
    ("Which did I fix first in February?", ["2023-02-14"], ["2023-03-14", "2022-02-14"]),
    ("my trip in June", ["2022-06-15"], ["2023-06-15", "2022-08-15"]),  # the last June
    ("the cake in May", ["2023-05-10"], ["2023-04-10"]),
    ("the gift I got last May", ["2022-05-10"], ["2023-05-10"]),  # the one before this month
    ("What did I buy in March 2021?", ["2021-03-10"], ["2023-03-10"]),
    ("In  the   last  month", ["2023-05-02"], ["2023-04-20"]),  # any whitespace
    ("the last weekend", ["2023-05-27"], ["2023-05-20"]),
])
def test_a_relative_date_is_a_span_around_its_day(text: str, inside_days: list[str],
                                                  outside_days: list[str]) -> None:
    for day in inside_days:
        assert covers(text, day), (text, day)
    for day in outside_days:
        assert not covers(text, day), (text, day)


@pytest.mark.parametrize("text", [
    "How many days ago did I read the March 15th issue?",  # a count asked for, not a date
    "What should I cook this weekend?",  # the coming weekend: nothing said yet
    "What am I doing this December?",  # the coming December
    "You may be right about the hike.",  # "may" the verb
    "What did I do on the last two days of my trip?",  # "last" of something else
    "the last month of my contract", "during the last week of the trip",
    "the last Friday of the month", "my last 2 weeks in Japan",
    "What is my dog's name?",
    "",
    # Letters that case-insensitive Unicode matching takes for ASCII ones ("ı" for "i",
    # "ſ" for "s"): no span, and no crash on looking the word up.
    "fıve days ago", "the paſt ſix days", "last frıday", "in Aprıl", "FİVE DAYS AGO",
    "yeſterday",
])
def test_no_relative_date_no_window(text: str) -> None:
    assert windows(text, NOW) == []


def test_inside_tells_each_time() -> None:
    times = np.array([at("2023-05-16"), at("2023-04-01"), at("2023-05-27")], np.float64)
    spans = windows("two weeks ago or last Saturday", NOW)
    assert inside(times, spans).tolist() == [True, False, True]


@pytest.mark.parametrize(("text", "inside_days", "outside_days"), [
    # NOW is 2023-05-30: spring 2023 is under way, the last summer to end is 2022's.
    ("What did we talk about last summer?", ["2022-06-01", "2022-08-31"],
     ["2022-09-10", "2023-05-20", "2021-07-10"]),
    ("in the summer", ["2022-07-10"], ["2023-05-20"]),
    ("this spring", ["2023-03-10", "2023-05-29"], ["2022-04-10"]),
    ("last winter", ["2022-12-10", "2023-02-10"], ["2023-03-10", "2021-12-10"]),
    ("during the autumn", ["2022-10-10"], ["2021-10-10"]),
    ("last fall", ["2022-10-10"], ["2023-05-10"]),
    ("in the summer of 2021", ["2021-07-10"], ["2022-07-10"]),
    ("in the winter of 2022", ["2022-01-10", "2021-12-10"], ["2022-12-10"]),
    ("What did I say in 2022?", ["2022-01-10", "2022-12-20"], ["2023-01-10", "2021-12-20"]),
    ("a few weeks ago", ["2023-05-14", "2023-05-02"], ["2023-04-20", "2023-05-28"]),
    ("a few days ago", ["2023-05-27"], ["2023-05-22"]),
    ("the past few days", ["2023-05-28"], ["2023-05-24"]),
    ("what I ate last night", ["2023-05-29"], ["2023-05-27"]),
])
def test_seasons_years_and_vague_counts_are_spans_too(text: str, inside_days: list[str],
                                                      outside_days: list[str]) -> None:
    for day in inside_days:
        assert covers(text, day), (text, day)
    for day in outside_days:
        assert not covers(text, day), (text, day)


@pytest.mark.parametrize("text", [
    "What will I do this summer?",  # the coming one: nothing said in it yet
    "the last summer of my childhood", "in the summer of my life",
    "Did I fall in the river?", "in 1850", "in 2031",  # before 1900 or ahead: no year
])
def test_no_season_or_year_no_window(text: str) -> None:
    assert windows(text, NOW) == []


def test_a_phrase_is_named_with_where_it_is_and_the_moment_it_names() -> None:
    found = named("What  did we   talk about two weeks ago?", NOW)
    assert len(found) == 1
    assert "What did we talk about two weeks ago?"[slice(*found[0].phrase)] == "two weeks ago"
    assert found[0].at == NOW - 14 * 86_400_000
    assert named("What did we talk about in October?", NOW)[0].at is None
