"""Questions whose only cue is a time, built from LoCoMo's dated sessions: does recall put
what was said then first?

    python -m semmem.evaluation.time_questions ../shared/data/locomo-dev

Each conversation's dialog turns are ingested as conversation sessions (``Conversations``,
the bundled model, a temporary LanceDB store): the first speaker's turns as the user's, the
second's as the assistant's, each turn at its session's date and time (a minute apart). For
every session, questions are asked as of a chosen *now* — "what did we talk about two weeks
ago?" twelve to sixteen days after it, "…a month ago?" 26 to 34 days after, "…last Tuesday?"
one to seven days after a Tuesday's session, "…in October?" in the first days of November,
"…last summer?" in mid-autumn — of the memory as it was then (the sessions said by now; what
was said later is not there yet). The *asked-about sessions* are defined here, not by the
ranker's calendar: those said in the month or season named; on the day named ("last Tuesday",
"yesterday") or within a day of it ("N days ago"); within three days of the date "N weeks
ago" names (now − 7N days); within a week of the date "a month ago" names (now − 30 days).

Figures, per ranking: the share of questions whose first recalled line (1,024 bytes) comes
from an asked-about session, the share whose 1,024 bytes hold any line from one, and the share
of the recalled lines that do; beside them, what a line drawn at random would score. Recall is
``results.relevant`` (what ``Memory.recall`` ends in) on the memory's items said by now; for
the questions asked after the last session, ``Memory.recall`` itself is run too and must give
the same lines.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.embedding.embedder import Embedder, embed_queries
from semmem.errors import InvalidInput
from semmem.evaluation.dataset import locomo_time
from semmem.items.address import Address
from semmem.memory import Memory
from semmem.ranking.ranker import Ranker, RankingConfig
from semmem.ranking.turns import piece_fields
from semmem.results import relevant
from semmem.store import Store
from semmem.store.views import ItemSet

BUDGET = 1024
_DAY = timedelta(days=1)
_NUMBER_WORDS = {1: "a", 2: "two", 3: "three", 6: "six", 9: "nine"}
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_SEASONS = (("spring", 3), ("summer", 6), ("autumn", 9), ("winter", 12))
_ASKED = ("What did we talk about {}?", "What did I say {}?", "Remind me what we discussed {}.",
          "What did I tell you {}?")


@dataclass(frozen=True)
class Session:
    """One dated LoCoMo session: its number, when it began and its turns (speaker, text)."""

    number: int
    at: datetime
    turns: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class TimeQuestion:
    """A question asked at ``now`` whose answer is what was said in ``sessions``."""

    text: str
    kind: str
    now: datetime
    sessions: frozenset[int]


@dataclass
class Tally:
    """Counts over questions for one ranking."""

    questions: int = 0
    first: int = 0
    any_line: int = 0
    lines: int = 0
    lines_then: int = 0
    chance: float = 0.0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind → [asked, first]

    def add(self, kind: str, sessions: Sequence[str | None], wanted: frozenset[str],
            chance: float) -> None:
        self.questions += 1
        then = [s in wanted for s in sessions]
        self.first += bool(then and then[0])
        self.any_line += any(then)
        self.lines += len(then)
        self.lines_then += sum(then)
        self.chance += chance
        counts = self.by_kind.setdefault(kind, [0, 0])
        counts[0] += 1
        counts[1] += bool(then and then[0])


def load_sessions(path: Path) -> tuple[str, str, list[Session]]:
    """A LoCoMo conversation's two speakers and its dated sessions that hold turns."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        talk = data.get("conversation", data)
        a, b = str(talk["speaker_a"]), str(talk["speaker_b"])
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise InvalidInput(f"{path}: not a LoCoMo conversation ({exc})") from exc
    sessions = []
    for key, turns in talk.items():
        if not key.startswith("session_") or not isinstance(turns, list) or not turns:
            continue
        number = int(key.removeprefix("session_"))
        when = locomo_time(talk.get(f"{key}_date_time"))  # as semmem eval reads it
        if when is None:
            continue
        at = datetime.fromtimestamp(when / 1000, UTC)
        sessions.append(Session(number, at, tuple(
            (str(t["speaker"]), str(t["text"])) for t in turns if str(t.get("text", "")).strip())))
    return a, b, sorted(sessions, key=lambda s: s.at)


def questions(sessions: Sequence[Session]) -> list[TimeQuestion]:
    """The time-only questions about ``sessions`` (see the module's docstring)."""
    out: list[TimeQuestion] = []

    def ask(phrase: str, kind: str, now: datetime, wanted: set[int]) -> None:
        if wanted:
            out.append(TimeQuestion(_ASKED[len(out) % len(_ASKED)].format(phrase), kind, now,
                                    frozenset(wanted)))

    def near(day: datetime, days: float) -> set[int]:
        return {s.number for s in sessions if abs(s.at - day) <= days * _DAY}

    def on(day: datetime) -> set[int]:
        return {s.number for s in sessions if s.at.date() == day.date()}

    for s in sessions:
        # Asked a little before or after the date the phrase names (people count loosely):
        # what is wanted is what was said around that date, whichever session it was.
        for n in (1, 2, 3, 6):
            now = s.at + (n * 7 + (s.number + n) % 5 - 2) * _DAY
            ask(f"{_NUMBER_WORDS[n]} week{'s' if n > 1 else ''} ago", "N weeks ago", now,
                near(now - n * 7 * _DAY, 3))
        for n in (3, 9):
            ask(f"{_NUMBER_WORDS[n]} days ago", "N days ago", s.at + n * _DAY, near(s.at, 1))
        now = s.at + (30 + s.number * 3 % 9 - 4) * _DAY
        ask("a month ago", "a month ago", now, near(now - 30 * _DAY, 7))
        ask(f"last {_WEEKDAYS[s.at.weekday()]}", "last <weekday>",
            _noon(s.at + (1 + s.number % 7) * _DAY), on(s.at))
        ask("yesterday", "yesterday", _noon(s.at + _DAY), on(s.at))
    months = sorted({(s.at.year, s.at.month) for s in sessions})
    for year, month in months:
        now = _noon(_next_month(year, month) + 9 * _DAY)
        wanted = {s.number for s in sessions if (s.at.year, s.at.month) == (year, month)}
        ask(f"in {_MONTHS[month - 1]}", "in <month>", now, wanted)
        ask("last month", "last month", now, wanted)
    for name, start in _SEASONS:
        for year in sorted({s.at.year for s in sessions} | {s.at.year - 1 for s in sessions}):
            first = datetime(year, start, 1, tzinfo=UTC)
            end = _next_month(*_month_after(first, 2))
            wanted = {s.number for s in sessions if first <= s.at < end}
            ask(f"last {name}", "a season", _noon(end + 20 * _DAY), wanted)
            ask(f"in the {name}", "a season", _noon(end + 20 * _DAY), wanted)
    return out


def _noon(day: datetime) -> datetime:
    return day.replace(hour=12, minute=0, second=0, microsecond=0)


def _month_after(d: datetime, n: int) -> tuple[int, int]:
    months = d.year * 12 + d.month - 1 + n
    return months // 12, months % 12 + 1


def _next_month(year: int, month: int) -> datetime:
    y, m = _month_after(datetime(year, month, 1, tzinfo=UTC), 1)
    return datetime(y, m, 1, tzinfo=UTC)


def _ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


async def _ingest(memory: Memory, name: str, a: str, sessions: Sequence[Session]) -> None:
    batch = []
    for s in sessions:
        at = _ms(s.at)
        messages = [Message("user" if speaker == a else "assistant", text, at + 60_000 * i)
                    for i, (speaker, text) in enumerate(s.turns)]
        batch.append((Address.of(SESSION, f"session_{s.number}"), messages))
    await Conversations(memory).ingest_many(name, batch)


async def measure(folder: Path, configs: dict[str, RankingConfig], embedder: Embedder
                  ) -> tuple[dict[str, Tally], int, int]:
    """Each ranking's tally over every conversation in ``folder``; also how many recalls
    were checked through ``Memory.recall`` and how many of them gave the same lines."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InvalidInput(f"{folder}: no LoCoMo .json files in it")
    tallies = {name: Tally() for name in configs}
    checked = same = 0
    with tempfile.TemporaryDirectory(prefix="semmem-time-") as tmp:
        store = Store(tmp, dim=embedder.dim, model_id=embedder.model_id)
        await store.open()
        memory = Memory(store, embedder)
        try:
            for path in files:
                a, _, sessions = load_sessions(path)
                await _ingest(memory, path.stem, a, sessions)
                checks = await _asked(memory, path.stem, questions(sessions), configs, tallies)
                checked += len(checks)
                same += sum(checks)
        finally:
            await memory.close()
    return tallies, checked, same


async def _asked(memory: Memory, partition: str, asked: Sequence[TimeQuestion],
                 configs: dict[str, RankingConfig], tallies: dict[str, Tally]) -> list[bool]:
    """Ask ``asked`` of the partition as it was at each one's now, tallying each ranking;
    for those asked after everything was said, whether ``Memory.recall`` (the first ranking)
    gave the same lines."""
    snap = await memory.snapshot(partition)
    said: list[tuple[str, int]] = []
    for item in snap.items:
        fields = piece_fields(item)
        said.append((fields[0], fields[2]) if fields else ("", item.ts))
    at = np.array([when for _, when in said], np.int64)
    session_of = {it.n: s for it, (s, _) in zip(snap.items, said, strict=True)}
    vectors = embed_queries(memory.embedder, [q.text for q in asked])
    checks: list[bool] = []
    for q, qvec in zip(asked, vectors, strict=True):
        rows = np.flatnonzero(at <= _ms(q.now))
        sub = ItemSet([snap.items[i] for i in rows], snap.vectors[rows])
        wanted = frozenset(f"session_{n}" for n in q.sessions)
        chance = float(np.mean([said[i][0] in wanted for i in rows]))
        for i, (name, config) in enumerate(configs.items()):
            ranker = Ranker(config, clock=_fixed(_ms(q.now)))
            got = relevant(ranker, sub, qvec, q.text, BUDGET, "")
            tallies[name].add(q.kind, [session_of.get(int(src["id"])) for src in got.sources],
                              wanted, chance)
            if i == 0 and rows.size == len(snap.items):
                real = await memory.with_ranker(ranker).recall(partition, q.text, BUDGET)
                checks.append(real.lines == got.lines)
    return checks


def _fixed(now: int) -> Callable[[], int]:
    return lambda: now


def report(tallies: dict[str, Tally], checked: int, same: int) -> str:
    """The figures as text."""
    any_tally = next(iter(tallies.values()))
    n = any_tally.questions
    lines = [f"{n} time-only questions; recall of {BUDGET} bytes",
             f"checked through Memory.recall: {same} of {checked} identical", "",
             f"{'':28} {'first line':>10} {'any line':>9} {'lines then':>11}"]
    for name, t in tallies.items():
        lines.append(f"{name:28} {100 * t.first / n:9.1f}% {100 * t.any_line / n:8.1f}% "
                     f"{100 * t.lines_then / max(t.lines, 1):10.1f}%")
    lines.append(f"{'a line at random (expected)':28} {100 * any_tally.chance / n:9.1f}%")
    lines += ["", "first line from the asked-about sessions, by kind (%)",
              f"{'':22}" + "".join(f"{name:>16}" for name in tallies)]
    for kind, (asked, _) in sorted(any_tally.by_kind.items()):
        lines.append(f"{kind + f' ({asked})':22}" + "".join(
            f"{100 * t.by_kind[kind][1] / asked:16.1f}" for t in tallies.values()))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m semmem.evaluation.time_questions LOCOMO_FOLDER``."""
    from semmem.embedding.files import default_model_dir
    from semmem.evaluation.embeddings import model_embedder

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m semmem.evaluation.time_questions LOCOMO_FOLDER", file=sys.stderr)
        return 2
    configs = {"defaults": RankingConfig.defaults()}
    if "span_first" in RankingConfig.model_fields:
        configs["span_first off"] = RankingConfig.defaults().model_copy(
            update={"span_first": False})
    configs["plain cosine"] = RankingConfig.plain_cosine()
    embedder = model_embedder(default_model_dir())
    print(report(*asyncio.run(measure(Path(args[0]), configs, embedder))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
