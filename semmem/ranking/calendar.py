"""Relative dates in a question, placed on the calendar: "two weeks ago", "a few days ago",
"last Saturday", "yesterday", "last night", "last month", "in the past three days", "this
year", "in February", "last summer", "in 2023".

A question about a time relative to now names when the turn it wants was said; ranking's
``window_weight`` lifts the conversation pieces said inside that time, and a question that
names nothing but the time gets them first (``span_first``; ``Ranker``). "Now" is the moment
of the recall (the wall clock), as for a user asking. English only, like the other cues
(``semmem.ranking.cues``); a question with no such phrase has no window. Windows are a little
wider than the phrase (a day either side; half a unit around "N weeks ago", one and a half
around "a few weeks ago"), since people count loosely and days here are UTC days, not the
user's.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Window = tuple[int, int]  # epoch ms, both ends included


class Named(NamedTuple):
    """A span of time a text names: the span, where its phrase is in the text (its whitespace
    runs collapsed to one space), and the moment it names when it names one ("two weeks
    ago": now less fourteen days; "in October": none)."""

    window: Window
    phrase: tuple[int, int]
    at: int | None = None

_DAY = 86_400_000
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "month": 30.44, "year": 365.25}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
            "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}
_VAGUE = frozenset({"a few", "few", "several"})
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_N = r"(\d{1,2}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six" \
     r"|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(day|week|month|year)s?"
# ASCII only: case-insensitive Unicode matching takes "ſ" for "s" and "ı" for "i", and what it
# matched would not be found in the tables above. Text is matched with its whitespace runs
# collapsed to one space (``windows``).
_FLAGS = re.IGNORECASE | re.ASCII
# A "last" that belongs to what follows is no date: "the last two days of my trip", "the last
# Friday of the month", "my last 2 weeks in Japan".
_NOT_OF = r"(?! of\b)"
_AGO = re.compile(rf"\b{_N} {_UNIT} ago\b", _FLAGS)
_PAST = re.compile(rf"(?<!my )(?<!our )\b(?:past|last|previous) {_N} {_UNIT}\b{_NOT_OF}",
                   _FLAGS)
_LAST_DAY = re.compile(rf"\blast ({'|'.join(_WEEKDAYS)})\b{_NOT_OF}", _FLAGS)
# "in the past month": the month up to now; "last month": the calendar month before this one.
_ROLLING = re.compile(rf"\bthe (?:past|last) (week|month|year)\b{_NOT_OF}", _FLAGS)
_LAST = re.compile(rf"(?:(?<!the )\blast (week|month|year)|\blast (weekend))\b{_NOT_OF}",
                   _FLAGS)
# Not "this weekend": asked on a weekday, it is the coming one.
_THIS = re.compile(r"\bthis (week|month|year)\b", _FLAGS)
_DAYS = re.compile(r"\b(the day before yesterday|yesterday|last night|today|tonight"
                   r"|this morning)\b", _FLAGS)
_DAYS_BACK = {"the day before yesterday": 2, "yesterday": 1, "last night": 1}
# "may" is a verb far more often than a month: only "May" after in / last / this / of counts.
# "last March" is the one before this month; "in March 2021" is that year's.
_MONTH = re.compile(r"\b((?i:in|last|this|of|during)) (" + "|".join(
    m.capitalize() if m == "may" else f"(?i:{m})" for m in _MONTHS) + r")\b(?: (\d{4})\b)?",
                    re.ASCII)
# Seasons as the northern hemisphere's meteorologists count them (winter: December to
# February). "last summer": the last one that has ended; "this summer": the current one, or
# this year's if it is over (not the coming one); "in the summer": the current one if it has
# begun, else the last one; "the summer of 2022": that year's (a winter named by a year is the
# one its January is in).
_SEASON_STARTS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_SEASON = re.compile(rf"\b((?<!the )last|this|(?:in|during|over)(?: the)?) "
                     rf"(spring|summer|autumn|fall|winter)(?: (?:of )?(\d{{4}}))?\b{_NOT_OF}",
                     _FLAGS)
_YEAR = re.compile(r"\b(?:in|during) (\d{4})\b", _FLAGS)
_FIRST_YEAR = 1900  # "in 1850" is hardly a time anyone asks a memory about


def windows(text: str, now: int) -> list[Window]:
    """The spans of time ``text`` names relative to ``now`` (epoch ms), widened a little;
    empty when it names none."""
    return [found.window for found in named(text, now)]


def named(text: str, now: int) -> list[Named]:
    """Each span of time ``text`` names relative to ``now`` (as ``windows``), with its phrase
    and the moment it names, if any."""
    text = " ".join(text.split())
    if not text:
        return []
    found: list[Named] = []
    today = datetime.fromtimestamp(now / 1000, UTC).replace(hour=0, minute=0, second=0,
                                                             microsecond=0)
    day0 = _ms(today)
    for m in _AGO.finditer(text):
        n, unit = _count(m.group(1)), m.group(2).lower()
        days = _UNIT_DAYS[unit]
        centre = now - round(n * days * _DAY)
        half = _DAY if unit == "day" else round(days / 2 * _DAY)
        if m.group(1).lower() in _VAGUE:  # "a few weeks ago": two to four and a half
            half = round(1.5 * days * _DAY)
        found.append(Named((centre - half, centre + half), m.span(), centre))
    for m in _PAST.finditer(text):
        n, unit = _count(m.group(1)), m.group(2).lower()
        found.append(Named((now - round((n * _UNIT_DAYS[unit] + 1) * _DAY), now), m.span()))
    for m in _LAST_DAY.finditer(text):
        back = (today.weekday() - _WEEKDAYS.index(m.group(1).lower())) % 7 or 7
        start = day0 - back * _DAY
        found.append(Named((start - _DAY, start + 2 * _DAY), m.span()))
    for m in _ROLLING.finditer(text):
        span = {"week": 7, "month": 31, "year": 366}[m.group(1).lower()]
        found.append(Named((now - (span + 1) * _DAY, now), m.span()))
    for m in _LAST.finditer(text):
        found.append(Named(_widened(*_previous((m.group(1) or m.group(2)).lower(), today)),
                           m.span()))
    for m in _THIS.finditer(text):
        found.append(Named((_widened(*_current(m.group(1).lower(), today))[0], now), m.span()))
    for m in _DAYS.finditer(text):
        back = _DAYS_BACK.get(m.group(1).lower(), 0)
        found.append(Named((day0 - back * _DAY - _DAY // 2, day0 - (back - 1) * _DAY + _DAY // 2),
                           m.span()))
    for m in _MONTH.finditer(text):
        month = _MONTHS.index(m.group(2).lower()) + 1
        if m.group(3):
            year = int(m.group(3))
        elif m.group(1).lower() == "last":  # the one before this month
            year = today.year if month < today.month else today.year - 1
        elif m.group(1).lower() == "this" and month > today.month:
            continue  # the coming one: nothing said in it yet
        else:  # this month, or the last one before it
            year = today.year if month <= today.month else today.year - 1
        if not 1 <= year <= 9999:
            continue
        first = datetime(year, month, 1, tzinfo=UTC)
        found.append(Named(_widened(first, _add_months(first, 1)), m.span()))
    for m in _SEASON.finditer(text):
        season = _season(m.group(1).lower(), m.group(2).lower(), m.group(3), today)
        if season is not None:
            found.append(Named(_widened(*season), m.span()))
    for m in _YEAR.finditer(text):
        year = int(m.group(1))
        if _FIRST_YEAR <= year <= today.year:
            found.append(Named(_widened(datetime(year, 1, 1, tzinfo=UTC),
                                        datetime(year + 1, 1, 1, tzinfo=UTC)), m.span()))
    return found


def inside(times: npt.NDArray[np.float64], spans: list[Window]) -> npt.NDArray[np.bool_]:
    """Whether each of ``times`` (epoch ms) falls in one of ``spans``."""
    out = np.zeros(times.shape, bool)
    for start, end in spans:
        out |= (times >= start) & (times <= end)
    return out


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word.lower()]


def _ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


def _widened(start: datetime, end: datetime) -> Window:
    """``[start, end)`` as epoch ms, a day wider at each end."""
    return _ms(start) - _DAY, _ms(end) + _DAY


def _add_months(d: datetime, n: int) -> datetime:
    months = d.year * 12 + d.month - 1 + n
    return d.replace(year=months // 12, month=months % 12 + 1, day=1)


def _current(unit: str, day: datetime) -> tuple[datetime, datetime]:
    """The week (from Monday), weekend (from Saturday), month or year ``day`` (a midnight) is
    in."""
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if unit == "weekend":
        start = day - timedelta(days=(day.weekday() - 5) % 7)
        return start, start + timedelta(days=2)
    if unit == "month":
        start = day.replace(day=1)
        return start, _add_months(start, 1)
    start = day.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _season(kind: str, name: str, year: str | None, today: datetime
            ) -> tuple[datetime, datetime] | None:
    """The season ``kind`` ("last", "this", "in the"…) and ``name`` mean on ``today`` (a
    midnight), ``[start, end)``; ``None`` for one that has not begun."""
    month = _SEASON_STARTS[name]

    def of(y: int) -> tuple[datetime, datetime]:
        start = datetime(y, month, 1, tzinfo=UTC)
        return start, _add_months(start, 3)

    if year is not None:
        y = int(year) - (month == 12)
        return of(y) if y >= _FIRST_YEAR and of(y)[0] <= today else None
    for y in (today.year, today.year - 1, today.year - 2):
        start, end = of(y)
        if kind == "last" and end <= today:
            return start, end
        if kind == "this" and start <= today and (end > today or start.year == today.year):
            return start, end  # the current one, or this year's past one
        if kind not in ("last", "this") and start <= today:
            return start, end
    return None


def _previous(unit: str, day: datetime) -> tuple[datetime, datetime]:
    """The week, weekend, month or year before the one ``day`` (a midnight) is in (a weekend:
    the last one that has ended by ``day``)."""
    start, _ = _current(unit, day)
    if unit == "week":
        return start - timedelta(days=7), start
    if unit == "weekend":
        back = start if start + timedelta(days=2) <= day else start - timedelta(days=7)
        return back, back + timedelta(days=2)
    if unit == "month":
        return _add_months(start, -1), start
    return start.replace(year=start.year - 1), start
