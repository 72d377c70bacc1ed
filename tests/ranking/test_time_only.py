"""A question whose only cue is a time ("what did I say in October?", "…a month ago?",
"…last summer?") gets what was said then first: issue 62's sessions, ingested at their times
into a real store and recalled with the bundled model, "now" fixed on the ranker's clock; and
the measurement that asks such questions of LoCoMo's dated sessions
(``semmem.evaluation.time_questions``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.embedding.reference import SentenceTransformerEmbedder
from semmem.evaluation.time_questions import load_sessions, measure, questions, report
from semmem.items.address import Address
from semmem.memory import Memory
from semmem.ranking.ranker import Ranker, RankingConfig
from tests.support.memory import open_memory

NOW = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)  # a Monday afternoon

# Each session: its days before NOW and what the user and the assistant said.
SESSIONS = {
    "knee": (9, "I hurt my knee playing football on Saturday and it is still swollen.",
             "Sorry to hear that. Rest it, ice it and keep it raised; see a doctor if the "
             "swelling lasts."),
    "kyoto": (40, "I'm planning a trip to Kyoto, I want to see the temples and the bamboo "
                  "forest.",
              "Kyoto is lovely in autumn: visit Fushimi Inari early and Arashiyama's bamboo "
              "grove."),
    "bread": (6, "The new sourdough starter is bubbling nicely on the counter.",
              "Feed it twice a day and it will be ready to bake with by the weekend."),
    "rent": (140, "My landlord wants to raise the rent by ten percent.",
             "Check your lease: most leases limit how often and by how much the rent can "
             "rise."),
}


def ms(when: datetime) -> int:
    return int(when.timestamp() * 1000)


@pytest.fixture
async def memory(tmp_path: Path, real_embedder: SentenceTransformerEmbedder
                 ) -> AsyncIterator[Memory]:
    mem = await open_memory(tmp_path / "db", real_embedder)
    talk = Conversations(mem)
    for session, (days, said, answered) in SESSIONS.items():
        at = ms(NOW - timedelta(days=days))
        await talk.ingest("p", Address.of(SESSION, session),
                          [Message("user", said, at), Message("assistant", answered, at + 60_000)])
    yield mem
    await mem.close()


async def first_line(memory: Memory, question: str, config: RankingConfig | None = None,
                     now: datetime = NOW) -> str:
    ranked = memory.with_ranker(Ranker(config, clock=lambda: ms(now)))
    lines = (await ranked.recall("p", question, 1024)).text.splitlines()
    return lines[0] if lines else ""


@pytest.mark.parametrize(("question", "said"), [
    ("What did I say in October?", "Kyoto"),
    ("What did I say a month ago?", "Kyoto"),
    ("What did I say six weeks ago?", "Kyoto"),
    ("What did we talk about nine days ago?", "knee"),
    ("What did I tell you last Tuesday?", "sourdough starter"),
    ("Remind me what we discussed last summer.", "landlord"),
    ("what did we talk about in July?", "landlord"),
])
async def test_a_question_that_names_only_a_time_gets_what_was_said_then(
        memory: Memory, question: str, said: str) -> None:
    assert said in await first_line(memory, question)


async def test_a_tuned_ranking_file_gets_them_too(memory: Memory, tmp_path: Path) -> None:
    # The tuned file (written before span_first existed): the knob takes its default.
    tuned = tmp_path / "ranking.json"
    tuned.write_text(json.dumps({"lexical_weight": 0.0, "centering": 0.0, "stemming": False,
                                 "time_weight": 0.0}))
    config = RankingConfig.from_file(tuned)
    for question in ("What did I say in October?", "What did I say a month ago?",
                     "What did I say six weeks ago?"):
        assert "Kyoto" in await first_line(memory, question, config), question


async def test_the_time_decides_and_a_topic_still_does(memory: Memory) -> None:
    # Without the time, the knee's line comes first for the same wording: the time is what
    # moves Kyoto's up. A question naming a topic is ranked by it, as before.
    assert "Kyoto" not in await first_line(memory, "What did I say?")
    assert "knee" in await first_line(memory, "What did I say about my knee?")
    assert "Kyoto" in await first_line(memory, "What did I say about Kyoto?")
    # A year later, "a month ago" holds nothing: no line of these sessions is lifted.
    later = await first_line(memory, "What did I say a month ago?", now=NOW + timedelta(days=365))
    assert "Kyoto" not in later
    # The reference ranker (plain cosine) knows no time.
    plain = RankingConfig.plain_cosine()
    assert "Kyoto" not in await first_line(memory, "What did I say in October?", plain)


def locomo_file(folder: Path) -> Path:
    """A LoCoMo-shaped conversation of three dated sessions, far apart in topic and time."""
    talk: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    sessions = [("1:56 pm on 8 May, 2023", ["I hurt my knee at football.", "Ice it often."]),
                ("10:37 am on 27 June, 2023", ["Kyoto's temples were lovely.", "Which one?"]),
                ("4:33 pm on 12 July, 2023", ["My sourdough starter bubbles.", "Feed it."])]
    for i, (when, turns) in enumerate(sessions, 1):
        talk[f"session_{i}_date_time"] = when
        talk[f"session_{i}"] = [{"speaker": ("Ana", "Ben")[j % 2], "dia_id": f"D{i}:{j}",
                                 "text": text} for j, text in enumerate(turns)]
    path = folder / "1.json"
    path.write_text(json.dumps({"conversation": talk, "qa": []}), encoding="utf-8")
    return path


def test_the_time_question_set_names_what_was_said_then(tmp_path: Path) -> None:
    _, _, sessions = load_sessions(locomo_file(tmp_path))
    asked = questions(sessions)
    by_kind = {(q.kind, q.now.date().isoformat()): (q.text, q.sessions) for q in asked}
    text, said = by_kind[("in <month>", "2023-06-10")]
    assert text.endswith(" in May?") and said == {1}
    assert by_kind[("last month", "2023-06-10")][1] == {1}
    summer = [q for q in asked if "summer" in q.text]
    assert len(summer) == 2 and all(q.sessions == {2, 3} for q in summer)
    assert not any("winter" in q.text for q in asked)  # nothing said then: not asked
    # "Two weeks ago" asked 12-16 days after a session names it and nothing else.
    weeks = [(q.now - sessions[0].at).days for q in asked
             if q.kind == "N weeks ago" and q.sessions == {1} and "two weeks" in q.text]
    assert len(weeks) == 1 and 12 <= weeks[0] <= 16


async def test_the_time_question_set_is_measured_through_the_core(
        tmp_path: Path, real_embedder: SentenceTransformerEmbedder) -> None:
    locomo_file(tmp_path)
    configs = {"defaults": RankingConfig.defaults(), "plain": RankingConfig.plain_cosine()}
    tallies, checked, same = await measure(tmp_path, configs, real_embedder)
    n = len(questions(load_sessions(tmp_path / "1.json")[2]))
    assert tallies["defaults"].questions == n and tallies["defaults"].first == n
    assert tallies["plain"].first < n
    assert checked > 0 and same == checked
    assert "first line" in report(tallies, checked, same)
