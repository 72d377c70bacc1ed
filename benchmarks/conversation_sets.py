"""The datasets and metrics of ``benchmarks/cases/conversations.py``: LongMemEval-S and LoCoMo
haystacks as sessions of turns, and turn coverage, full coverage, answer in text, session@5."""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from semmem.evaluation.dataset import _dia_ids, locomo_time
from semmem.items import iso
from semmem.ranking.lexical import tokens

COVERED = 0.6  # share of a turn's content words the recalled text must hold
SHORT_ANSWER_WORDS = 4
LOCOMO_TYPES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


@dataclass
class Answer:
    """What one system returned for one question: recalled text per budget, top-5 sessions."""

    texts: dict[int, str]
    top_sessions: list[str]


@dataclass
class Turn:
    """One message of a session, and whether a question's evidence is in it."""

    role: str
    content: str
    key: str  # unique within the haystack (a dialog id, or session/position)


@dataclass
class Session:
    """A session of turns, with its date (ISO 8601)."""

    id: str
    at: str
    turns: list[Turn]


@dataclass
class Question:
    """A question, its haystack (partition) and the evidence it needs."""

    id: str
    type: str
    text: str
    answer: str
    partition: str
    evidence: list[Turn]
    sessions: frozenset[str]
    asked: str | None = None  # when it was asked (ISO 8601), where the data says


@dataclass
class Dataset:
    """Haystacks (one partition each) and the questions asked of them."""

    name: str
    haystacks: dict[str, list[Session]] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)


def _lme_date(value: str) -> str:
    """LongMemEval's ``2023/05/20 (Sat) 06:37`` as ISO 8601 UTC."""
    return datetime.strptime(value[:10] + value[-5:], "%Y/%m/%d%H:%M").replace(
        tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:00Z")


def load_longmemeval(folder: Path, limit: int | None) -> Dataset:
    """One partition per question, sessions sorted by date; ``has_answer`` marks evidence."""
    out = Dataset("longmemeval")
    paths = sorted(folder.glob("*.json"))
    # Evenly spaced through the (hash-ordered) ids, so a sample mixes the question types.
    step = max(1, len(paths) // limit) if limit else 1
    for path in paths[::step][:limit]:
        data = json.loads(path.read_text(encoding="utf-8"))
        partition = f"lme-{data['question_id']}"
        sessions, evidence, where = [], [], set()
        dated = sorted(zip(data["haystack_dates"], data["haystack_session_ids"],
                           data["haystack_sessions"], strict=True), key=lambda s: _lme_date(s[0]))
        for date, sid, turns in dated:
            session = Session(sid, _lme_date(date), [])
            for i, t in enumerate(turns):
                turn = Turn(t["role"], t["content"], f"{sid}/{i}")
                session.turns.append(turn)
                if t.get("has_answer"):
                    evidence.append(turn)
                    where.add(sid)
            sessions.append(session)
        out.haystacks[partition] = smoke_cut(sessions, where)
        out.questions.append(Question(data["question_id"], data["question_type"],
                                      data["question"], str(data["answer"]), partition,
                                      evidence, frozenset(where),
                                      _lme_date(data["question_date"])))
    return out


def load_locomo(folder: Path, limit: int | None) -> Dataset:
    """One partition per conversation, its dialogs as turns (two people: each speaker's name
    is the role and leads the content); category 5 skipped."""
    out = Dataset("locomo")
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        partition = f"locomo-{path.stem}"
        sessions, by_dia = [], {}
        numbers = sorted(int(m.group(1)) for k in data
                         if (m := re.fullmatch(r"session_(\d+)", k)) and data[k])
        for number in numbers:
            when = locomo_time(data.get(f"session_{number}_date_time"))
            session = Session(f"S{number}", iso(when or 0), [])
            for turn in data[f"session_{number}"]:
                t = Turn(turn["speaker"], f"{turn['speaker']}: {turn['text']}", turn["dia_id"])
                session.turns.append(t)
                by_dia[turn["dia_id"]] = (t, session.id)
            sessions.append(session)
        out.haystacks[partition] = sessions
        for i, qa in enumerate(data["qa"], 1):
            kind = LOCOMO_TYPES.get(str(qa.get("category")))
            found = [by_dia[d] for d in _dia_ids(qa.get("evidence") or []) if d in by_dia]
            if kind is None or not found:
                continue
            out.questions.append(Question(
                f"{path.stem}/q{i}", kind, str(qa["question"]), str(qa.get("answer", "")),
                partition, [t for t, _ in found], frozenset(s for _, s in found)))
    if limit is not None:
        out.questions = out.questions[:limit]
        keep = {q.partition for q in out.questions}
        out.haystacks = {p: smoke_cut(s, {w for q in out.questions if q.partition == p
                                          for w in q.sessions})
                         for p, s in out.haystacks.items() if p in keep}
    return out


def smoke_cut(sessions: list[Session], evidence: set[str] | frozenset[str]) -> list[Session]:
    """In a smoke run (``SEMMEM_BENCH_SMOKE``), a haystack of its evidence's sessions and the
    first two; else all of it."""
    if not os.environ.get("SEMMEM_BENCH_SMOKE"):
        return sessions
    return [s for k, s in enumerate(sessions) if s.id in evidence or k < 2]


# --- metrics ---------------------------------------------------------------------------------

def content_words(text: str) -> set[str]:
    """Case-folded words without stop words (not stemmed)."""
    return set(tokens(text, stemming=False))


def covered(turn: Turn, recalled: set[str]) -> bool:
    """Whether ``recalled`` holds ≥ COVERED of the turn's content words."""
    words = content_words(turn.content)
    return bool(words) and len(words & recalled) >= COVERED * len(words)


def short_answer(answer: str) -> str | None:
    """The answer when it is short enough to be looked for verbatim."""
    words = answer.strip().rstrip(".").split()
    return " ".join(words) if 0 < len(words) <= SHORT_ANSWER_WORDS else None


@dataclass
class Tally:
    """Sums for one (system, question type, budget)."""

    turns: int = 0
    turns_covered: int = 0
    questions: int = 0
    full: int = 0
    answers: int = 0
    answers_found: int = 0
    sessions: int = 0
    session_hits: int = 0

    def add(self, q: Question, text: str, top: list[str]) -> None:
        recalled = content_words(text)
        hits = [covered(t, recalled) for t in q.evidence]
        if hits:
            self.turns += len(hits)
            self.turns_covered += sum(hits)
            self.questions += 1
            self.full += all(hits)
            self.sessions += 1
            self.session_hits += bool(q.sessions & set(top))
        short = short_answer(q.answer) if q.evidence else None
        if short is not None:
            self.answers += 1
            found = re.search(rf"(?<!\w){re.escape(short.casefold())}(?!\w)", text.casefold())
            self.answers_found += found is not None


def share(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "  – "


def report(name: str, questions: Sequence[Question], answers: dict[str, list[Answer]],
           budgets: Sequence[int]) -> str:
    """Per question type and overall: turn / full coverage, answer in text, session@5."""
    kinds = [*sorted({q.type for q in questions}), "overall"]
    tallies: dict[tuple[str, str, int], Tally] = defaultdict(Tally)
    for system, found in answers.items():
        for q, a in zip(questions, found, strict=True):
            for b in budgets:
                for kind in (q.type, "overall"):
                    tallies[system, kind, b].add(q, a.texts[b], a.top_sessions)
    counts = {k: sum(1 for q in questions if q.type == k or k == "overall") for k in kinds}
    head = " | ".join(f"{s} {b // 1024}K" for s in answers for b in budgets)
    out = [f"\n{name}: {len(questions)} questions, "
           f"{sum(len(q.evidence) for q in questions)} evidence turns"]
    for title, part, whole in (("turn coverage", "turns_covered", "turns"),
                               ("full coverage", "full", "questions"),
                               ("answer in text", "answers_found", "answers")):
        out += [f"\n{title}", f"| type (questions) | {head} |",
                "| --- |" + " --- |" * (len(answers) * len(budgets))]
        for k in kinds:
            cells = [share(getattr(t, part), getattr(t, whole)) for s in answers for b in budgets
                     for t in [tallies[s, k, b]]]
            out.append(f"| {k} ({counts[k]}) | " + " | ".join(cells) + " |")
    top = budgets[0]
    out.append("\nsession@5: " + ", ".join(
        f"{s} {share(tallies[s, 'overall', top].session_hits, tallies[s, 'overall', top].sessions)}"
        for s in answers))
    out.append("evidence turns covered at a budget and lost at a larger one: " + ", ".join(
        f"{s} {lost(questions, found, budgets)}" for s, found in answers.items()))
    return "\n".join(out)


def lost(questions: Sequence[Question], answers: Sequence[Answer], budgets: Sequence[int]
         ) -> int:
    """How many (question, evidence turn) pairs some budget covers and a larger one does not
    (more budget should never cover less)."""
    count = 0
    for q, a in zip(questions, answers, strict=True):
        words = {b: content_words(a.texts[b]) for b in budgets}
        for turn in q.evidence:
            hit = [covered(turn, words[b]) for b in sorted(budgets)]
            count += any(h and not later for i, h in enumerate(hit) for later in hit[i + 1:])
    return count
