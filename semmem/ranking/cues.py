"""Cues in a query's wording that ranking weighs beside similarity: asking *when*.

English-only. A fact that says when something happened ("last Saturday", "two years ago", "in
June", "in 2022") is what a when-question needs; ranking's ``time_weight`` favours such facts
for a query that asks when something happened or how long it lasted.
"""

from __future__ import annotations

import re

from semmem.ranking.lexical import stem, tokens, word_set

# A fact that says when
# something happened ("last Saturday", "two years ago", "in June", "in 2022") is what a
# when-question needs. Not "may": a verb far more often.
_ASKS_WHEN = re.compile(
    r"^\W*when\b|\bhow long\b|\b(what|which) (year|month|date|day|time|week)\b"
    r"|\bhow (many|much) (years|months|weeks|days|time)\b",
    re.IGNORECASE,
)
TIME_WORDS = word_set(
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


def mentions_time(text: str, *, stemming: bool = True) -> bool:
    """Whether ``text`` names a time: a weekday, a month, a year, or a relative one."""
    return any(is_time_term(t, stemming=stemming) for t in tokens(text, stemming=stemming))


_STEMMED_TIME_WORDS = frozenset(stem(w) for w in TIME_WORDS)
