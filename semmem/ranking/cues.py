"""Cues in a query's wording that ranking weighs beside similarity: asking *when*, asking what
the assistant said, asking about the present or the recent past, asking for several things at
once, asking about a time and nothing else.

English-only. A fact that says when something happened ("last Saturday", "two years ago", "in
June", "in 2022") is what a when-question needs; ranking's ``time_weight`` favours such facts
for a query that asks when something happened or how long it lasted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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


# Asking what the assistant said: "you recommended", "our previous conversation".
_ASKS_ASSISTANT = re.compile(
    r"\byou(?:'ve| have| had)? (?:said|mentioned|recommended|suggested|told|gave|provided|"
    r"listed|shared|explained|described|named|proposed|wrote|came up with)\b"
    r"|\b(?:did|do|could|would) you (?:say|mention|recommend|suggest|tell|give|provide|list|"
    r"share|explain|describe|name|propose|write|come up with)\b"
    r"|\b(?:our|the|that) (?:previous|earlier|last|past|recent) (?:conversation|chat|discussion)",
    re.IGNORECASE,
)
# Asking about the present or the recent past, where the newer of two turns is the answer:
# "my current…", "now", "two weeks ago", "last Saturday".
_ASKS_RECENT = re.compile(
    r"\b(?:current(?:ly)?|now|latest|most recent(?:ly)?|recently|these days|anymore|still)\b"
    r"|\b(?:\w+ )?(?:days?|weeks?|months?) ago\b"
    r"|\b(?:last|past|this) (?:week(?:end)?|month|night|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday)\b",
    re.IGNORECASE,
)
# Asking for several things at once, to count, add up or set side by side ("how many plants",
# "the total amount", "both"): their turns are usually in different sessions.
_ASKS_SEVERAL = re.compile(
    r"\bhow (?:many|much)\b|\b(?:in )?total\b|\baltogether\b|\bcombined\b|\bin all\b"
    r"|\bboth\b",
    re.IGNORECASE,
)


# The words a question about a time is phrased with when it names nothing else ("what did we
# talk about in October?", "remind me what I said last week", "anything from last summer?"),
# beside the function and request words ``tokens`` leaves out already.
_TALK_WORDS = word_set(
    """say said says saying tell told telling talk talked talking discuss discussed discussing
    discussion mention mentioned chat chatted chatting speak spoke spoken conversation
    conversations ask asked remind reminded write wrote written share shared happen happened
    happening go going went anything something everything stuff thing things topic topics
    subject subjects again back earlier around roughly exactly"""
)


def asks_assistant(text: str) -> bool:
    """Whether ``text`` asks about what the assistant said in a conversation."""
    return _ASKS_ASSISTANT.search(text) is not None


def asks_recent(text: str) -> bool:
    """Whether ``text`` asks about the present or the recent past ("my current…", "last
    week", "two days ago")."""
    return _ASKS_RECENT.search(text) is not None


def asks_several(text: str) -> bool:
    """Whether ``text`` asks for several things at once: to count, add up or compare them."""
    return _ASKS_SEVERAL.search(text) is not None


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


def names_only_time(text: str, phrases: Sequence[tuple[int, int]]) -> bool:
    """Whether ``text``, once its time phrases are cut out (``phrases``: where each is in
    ``text`` with its whitespace runs collapsed, as ``calendar.named`` gives them), names
    nothing but the talk itself: "what did I say in October?", "what did we discuss six weeks
    ago?". False when it names no time."""
    if not phrases:
        return False
    text = " ".join(text.split())
    rest, last = [], 0
    for start, end in sorted(phrases):
        rest.append(text[last:start])
        last = max(last, end)
    rest.append(text[last:])
    return all(t in _STEMMED_TALK_WORDS for t in tokens(" ".join(rest), stemming=True))


_STEMMED_TALK_WORDS = frozenset(stem(w) for w in _TALK_WORDS)
