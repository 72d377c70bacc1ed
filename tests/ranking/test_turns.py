"""Ranking pieces of conversations: the line's date and role, the assistant's words, sessions
that match as a whole, recent turns for questions about now; facts ranked as before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.items import Item
from semmem.ranking.cues import asks_assistant, asks_recent, asks_several
from semmem.ranking.packing import render_line
from semmem.ranking.ranker import Ranker, RankingConfig
from semmem.ranking.turns import Turns
from semmem.store.views import ItemSet
from tests.ranking.test_ranker import unit

DAY = 86_400_000


def piece(n: int, text: str, session: str = "s1", role: str = "user",
          at: str = "2023-05-20T10:00:00Z", message: int = 0, part: int = 0) -> Item:
    attrs: dict[str, Any] = {"keyed": {"space": "session", "key": session},
                             "piece": {"role": role, "at": at, "message": message,
                                       "part": part}}
    return Item(n, text, 1000 * n, 1000 * n, 1, n, "test", attrs)


def fact(n: int, text: str) -> Item:
    return Item(n, text, 1000 * n, 1000 * n, 1, n, "test")


def item_set(items: Sequence[Item], vectors: Sequence[np.ndarray] | np.ndarray) -> ItemSet:
    matrix = vectors if isinstance(vectors, np.ndarray) else np.stack(list(vectors))
    return ItemSet(list(items), np.ascontiguousarray(matrix, dtype=np.float32))


def test_a_piece_line_leads_with_its_date_and_role_and_a_fact_line_does_not() -> None:
    assert render_line(piece(12, "I just got an Air Fryer.")) == (
        "12. [2023-05-20 user] I just got an Air Fryer.")
    assert render_line(fact(3, "Maya is vegetarian")) == "3. Maya is vegetarian"


def test_cues_for_the_assistant_and_for_the_recent_past() -> None:
    assert asks_assistant("Remind me of the restaurant in Rome you recommended")
    assert asks_assistant("I was thinking about our previous conversation about privacy")
    assert not asks_assistant("Which restaurant in Rome did I book?")
    assert asks_recent("What is my current job?") and asks_recent("What did I do two weeks ago?")
    assert asks_recent("Who did I go with last Saturday?")
    assert not asks_recent("Where does my sister Emily live?")
    assert asks_several("How many plants did I buy?") and asks_several("The total I spent?")
    assert asks_several("How much did I spend on car wash and parking altogether?")
    assert asks_several("Did I visit both museums?")
    assert not asks_several("Which plant did I buy from my sister?")
    assert not asks_several("What was the totally unexpected gift?")


def test_turns_carried_forward_match_a_fresh_read() -> None:
    old = [piece(1, "a", "s1"), fact(2, "b"), piece(3, "c", "s2", "assistant", message=1),
           piece(4, "d", "s2", message=2)]
    vecs = [unit(1, 0)] * 4
    before = item_set(old, vecs)
    turns = Turns.of(before)
    new_items = [old[0], piece(3, "c2", "s3", "user", message=5), old[3],
                 piece(5, "e", "s1", "assistant", at="2023-06-01T00:00:00Z")]
    after = item_set(new_items, [unit(1, 0)] * 4)
    carried = turns.evolve(before, after, range(3, 4), [1], [1])
    fresh = Turns.of(after)
    for name in ("piece", "assistant", "at"):
        assert np.array_equal(getattr(carried, name), getattr(fresh, name)), name
    # Codes may differ; the grouping they make may not.
    for name in ("session", "message"):
        a, b = getattr(carried, name), getattr(fresh, name)
        assert np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :]), name


def test_facts_alone_rank_exactly_as_without_the_piece_terms() -> None:
    snap = item_set([fact(1, "tea in the morning"), fact(2, "coffee at noon"),
                     fact(3, "a walk last week")], [unit(1, 0.2), unit(0.5, 1), unit(1, 1)])
    plain = RankingConfig.defaults().model_copy(update={
        "assistant_weight": 0.0, "session_weight": 0.0, "recent_weight": 0.0,
        "message_share": 0.0})
    lit = plain.model_copy(update={"assistant_weight": 0.3, "session_weight": 0.3,
                                   "recent_weight": 0.3, "message_share": 1.0,
                                   "window_weight": 0.3})
    q = unit(1, 0.3)
    asked = "what did I drink now, last week, you said"
    a = Ranker(plain, clock=lambda: 10_000).score(snap, q, asked)
    b = Ranker(lit, clock=lambda: 10_000).score(snap, q, asked)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_a_session_that_matches_as_a_whole_lifts_its_pieces() -> None:
    # Piece 1 is alone in its session; pieces 2-4 share one, each as close as piece 1 or
    # slightly less: with the session term, the session's best piece comes first.
    items = [piece(1, "x", "lone"), piece(2, "y", "busy"), piece(3, "z", "busy"),
             piece(4, "w", "busy")]
    vecs = [unit(1, 0.50), unit(1, 0.55), unit(1, 0.6), unit(1, 0.6)]
    snap = item_set(items, vecs)
    base = RankingConfig.plain_cosine()
    q = unit(1, 0)
    assert [s.item.n for s in Ranker(base).rank(snap, q, "q")][:2] == [1, 2]
    lifted = base.model_copy(update={"session_weight": 0.2, "session_min_cosine": 0.5})
    assert [s.item.n for s in Ranker(lifted).rank(snap, q, "q")][:2] == [2, 3]


def test_the_rest_of_a_matching_message_follows_its_best_piece() -> None:
    # A long message cut in three: its first piece matches best, the other two less than an
    # unrelated piece (4) and a fact (5); lifted towards their best sibling, they come before
    # them, so the recall holds the whole turn rather than a third of it.
    items = [piece(1, "a", message=3, part=0), piece(2, "b", message=3, part=1),
             piece(3, "c", message=3, part=2), piece(4, "d", "s2"), fact(5, "e")]
    vecs = [unit(1, 0.2), unit(1, 1.2), unit(1, 1.3), unit(1, 0.6), unit(1, 0.7)]
    snap = item_set(items, vecs)
    base = RankingConfig.plain_cosine()
    q = unit(1, 0)
    assert [s.item.n for s in Ranker(base).rank(snap, q, "q")] == [1, 4, 5, 2, 3]
    shared = base.model_copy(update={"message_share": 0.8})
    ranked = Ranker(shared).rank(snap, q, "q")
    assert [s.item.n for s in ranked] == [1, 2, 3, 4, 5]
    plain = {s.item.n: s.score for s in Ranker(base).rank(snap, q, "q")}
    best = plain[1]
    for s in ranked:  # 80 % of the gap to the message's best closed; others untouched
        gap = best - plain[s.item.n] if s.item.n <= 3 else 0.0
        assert s.score == pytest.approx(plain[s.item.n] + 0.8 * gap, abs=1e-6)


def test_recent_pieces_first_when_the_input_asks_about_now() -> None:
    items = [piece(1, "old", "s1", at="2023-01-01T00:00:00Z"),
             piece(2, "new", "s2", at="2023-06-01T00:00:00Z")]
    snap = item_set(items, [unit(1, 0.30), unit(1, 0.33)])
    cfg = RankingConfig.plain_cosine().model_copy(update={"recent_weight": 0.1})
    q = unit(1, 0)
    assert [s.item.n for s in Ranker(cfg).rank(snap, q, "where do I work")] == [1, 2]
    assert [s.item.n for s in Ranker(cfg).rank(snap, q, "where do I work now")] == [2, 1]


def test_a_piece_said_in_the_time_the_question_names_comes_first() -> None:
    # Two hikes, the older one a little closer to the question: "two weeks ago" counted from
    # the clock lifts the one said then; without a relative date, or with the clock a year
    # later, the plain order stands. Facts are never lifted.
    now = 1_685_458_800_000  # 2023-05-30T15:00Z
    items = [piece(1, "hiked with Alex", "s1", at="2023-03-01T10:00:00Z"),
             piece(2, "hiked with Sam", "s2", at="2023-05-16T10:00:00Z"), fact(3, "hike")]
    snap = item_set(items, [unit(1, 0.30), unit(1, 0.33), unit(1, 0.31)])
    cfg = RankingConfig.plain_cosine().model_copy(update={"window_weight": 0.3})
    q = unit(1, 0)
    asked = "Who did I go hiking with two weeks ago?"
    assert [s.item.n for s in Ranker(cfg, clock=lambda: now).rank(snap, q, asked)] == [2, 1, 3]
    assert [s.item.n for s in Ranker(cfg, clock=lambda: now).rank(snap, q, "Who hiked?")] == [
        1, 3, 2]
    later = now + 365 * DAY
    assert [s.item.n for s in Ranker(cfg, clock=lambda: later).rank(snap, q, asked)] == [1, 3, 2]
    off = cfg.model_copy(update={"window_weight": 0.0})
    assert [s.item.n for s in Ranker(off, clock=lambda: now).rank(snap, q, asked)] == [1, 3, 2]


def test_a_question_about_several_things_spreads_the_first_lines_over_sessions() -> None:
    # Session "busy" talks about the topic in three messages (1-3, message 1 cut in two: 1
    # and 4), each closer than the lone pieces of sessions "a" and "b" (5, 6); a fact (7)
    # comes last.
    items = [piece(1, "w", "busy", message=0), piece(2, "x", "busy", message=1),
             piece(3, "y", "busy", message=2), piece(4, "w2", "busy", message=0, part=1),
             piece(5, "u", "a"), piece(6, "v", "b"), fact(7, "f")]
    vecs = [unit(1, 0.10), unit(1, 0.14), unit(1, 0.18), unit(1, 0.12), unit(1, 0.3),
            unit(1, 0.35), unit(1, 0.4)]
    snap = item_set(items, vecs)
    cfg = RankingConfig.plain_cosine().model_copy(update={"session_spread": 0.1,
                                                          "spread_lines": 4})
    q = unit(1, 0)
    plain = [1, 4, 2, 3, 5, 6, 7]
    assert [s.item.n for s in Ranker(cfg).rank(snap, q, "Which one did I like?")] == plain
    ranked = Ranker(cfg).rank(snap, q, "How many did I like?")
    # 1; its own second piece (4) loses nothing; 2 and 3 lose 0.1 per busy message picked,
    # so 5 and 6 come first; past the four lines, the order is the plain one.
    assert [s.item.n for s in ranked] == [1, 4, 5, 6, 2, 3, 7]
    scores = {s.item.n: s.score for s in Ranker(cfg).rank(snap, q, "Which one did I like?")}
    assert {s.item.n: s.score for s in ranked} == scores  # reordered, not rescored
    off = cfg.model_copy(update={"session_spread": 0.0})
    assert [s.item.n for s in Ranker(off).rank(snap, q, "How many did I like?")] == plain
    short = cfg.model_copy(update={"spread_lines": 2})
    assert [s.item.n for s in Ranker(short).rank(snap, q, "How many did I like?")] == plain


def test_facts_alone_are_never_spread() -> None:
    snap = item_set([fact(1, "a"), fact(2, "b"), fact(3, "c")],
                    [unit(1, 0.1), unit(1, 0.2), unit(1, 0.3)])
    cfg = RankingConfig.plain_cosine().model_copy(update={"session_spread": 1.0})
    assert [s.item.n for s in Ranker(cfg).rank(snap, unit(1, 0), "how many?")] == [1, 2, 3]


@pytest.fixture(scope="module")
def embedded(real_embedder: SentenceTransformerEmbedder) -> tuple[ItemSet, Any]:
    items = [
        piece(1, "I take my Canon EOS 80D on every trip, it is the camera I use for everything."),
        piece(2, "For landscape shots in a national park, a sturdy tripod and an aperture of f/8 "
                 "to f/11 work with any camera.", role="assistant", message=1),
        piece(3, "I also started a vegetable garden on my balcony last spring.", "s2"),
    ]
    return item_set(items, real_embedder.embed_batch([it.text for it in items])), real_embedder


def test_the_users_own_words_come_before_the_assistants_echo(
        embedded: tuple[ItemSet, Any]) -> None:
    snap, model = embedded
    question = "What camera do I use for landscape photography?"
    qvec = model.embed_batch([question])[0]
    plain = RankingConfig.defaults().model_copy(update={"assistant_weight": 0.0})
    assert Ranker(plain).rank(snap, qvec, question)[0].item.n == 2  # the echo wins on words
    assert Ranker().rank(snap, qvec, question)[0].item.n == 1
    asked = "What did you suggest about the camera for landscape photography?"
    avec = model.embed_batch([asked])[0]
    assert Ranker().rank(snap, avec, asked)[0].item.n == 2


def cosine_to_first_axis(c: float) -> np.ndarray:
    return unit(c, float(np.sqrt(1 - c * c)))


def test_a_question_naming_only_a_time_gets_what_was_said_then_first() -> None:
    # Three things said around six weeks before now (two pieces and a fact written then), all
    # far from the question's wording (below the floor), and one said nine days ago that is
    # close to it. Named only by a time, they come first, the days nearest the moment it names
    # first ("six weeks ago": 18 April, 15:00), or by score when it names a month; the rest follow
    # as for any question (3 and 4 are both within a day of the moment: by score). A question
    # naming a topic as well is ranked as before.
    now = 1_685_458_800_000  # 2023-05-30T15:00Z
    written = 1_681_905_600_000  # 2023-04-19T12:00Z
    items = [piece(1, "kyoto", "s1", at="2023-04-20T10:00:00Z"),
             piece(2, "knee", "s2", at="2023-05-21T10:00:00Z"),
             piece(3, "temples", "s3", at="2023-04-18T10:00:00Z"),
             Item(4, "a fact written then", written, written, 1, 4, "test")]
    snap = item_set(items, [cosine_to_first_axis(c) for c in (0.05, 0.5, 0.02, 0.03)])
    cfg = RankingConfig.plain_cosine().model_copy(update={"min_score": 0.1,
                                                          "span_first": True})
    q = unit(1, 0)

    def ranked(question: str, config: RankingConfig = cfg) -> list[int]:
        return [s.item.n for s in Ranker(config, clock=lambda: now).rank(snap, q, question)]

    assert ranked("What did I say six weeks ago?") == [4, 3, 1, 2]
    assert ranked("What did we talk about in April?") == [1, 4, 3, 2]
    assert ranked("What did I say about Kyoto six weeks ago?") == [2]
    assert ranked("What did I say?") == [2]
    assert ranked("What did I say in April?", cfg.model_copy(update={"span_first": False})
                  ) == [2]
    assert ranked("What did I say in April?", cfg.model_copy(update={"candidates": 2})
                  ) == [1, 4]
    # Scores are not changed, only the order.
    scores = Ranker(cfg, clock=lambda: now).score(snap, q, "What did I say in April?")[0]
    by_n = {s.item.n: s.score for s in Ranker(cfg, clock=lambda: now).rank(
        snap, q, "What did I say in April?")}
    assert by_n == pytest.approx({n: float(scores[n - 1]) for n in (1, 2, 3, 4)})
