"""Labelled sets: facts grouped by partition, and queries naming the facts relevant to them.

Two sources:

- a JSONL file (the documented format, see ``docs/ranking.md``), one object per line::

    {"type": "fact", "partition": "p", "id": "f1", "text": "…", "ts": "2024-05-01T10:00:00Z"}
    {"type": "query", "partition": "p", "id": "q1", "text": "…", "relevant": ["f1"]}

  Facts are remembered in file order within their partition (``ts`` is optional). A query
  with an empty ``relevant`` list is an off-topic probe: anything recalled for it is noise.
  A record without ``partition`` is in the file's own (named after it), and a line of
  ``semmem export`` (no ``type``: ``n``, ``text``, ``ts``…) is a fact whose id is its number,
  so an export with queries appended is a labelled set::

    {"n": 1, "text": "Prefers SI units", "ts": "…", "updated": "…", "revision": 2}
    {"type": "query", "text": "which units do I use?", "relevant": ["1"]}

- a LoCoMo folder (or one LoCoMo ``.json``): each conversation is a partition, every
  ``session_K_observation`` fact is remembered in session order, and ``qa[].evidence`` dialog
  ids label the facts that carry them. Category 5 (adversarial) questions are skipped, and so
  are questions whose evidence no observation carries (counted in ``Partition.skipped``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from semmem.errors import InvalidInput
from semmem.items import parse_iso

LOCOMO_SKIPPED_CATEGORIES = frozenset({"5"})
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_SESSION_OBS = re.compile(r"session_(\d+)_observation")


@dataclass(frozen=True)
class Fact:
    """One labelled fact: remembered in its partition in the order given."""

    id: str
    text: str
    ts: int | None = None


@dataclass(frozen=True)
class Query:
    """One query and the ids of the facts relevant to it."""

    id: str
    text: str
    relevant: frozenset[str]
    category: str | None = None


@dataclass
class Partition:
    """The facts of one partition, in remember order, and the queries asked of it."""

    name: str
    facts: list[Fact] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    skipped: int = 0  # source questions left out: no fact carries their evidence


@dataclass
class LabelledSet:
    """A labelled set: partitions of facts with their queries."""

    name: str
    partitions: list[Partition]

    @property
    def fact_count(self) -> int:
        """Number of facts over all partitions."""
        return sum(len(p.facts) for p in self.partitions)

    def subset(self, names: Iterable[str]) -> LabelledSet:
        """The same set restricted to the partitions named (in this set's order)."""
        wanted = set(names)
        return LabelledSet(self.name, [p for p in self.partitions if p.name in wanted])


def load_dataset(path: Path) -> LabelledSet:
    """Load a labelled set: a JSONL file, a LoCoMo ``.json`` file or a folder of them.

    Raises:
        InvalidInput: the path does not exist or a record is malformed (names file and line).
    """
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=_natural)
        if not files:
            jsonl = sorted(path.glob("*.jsonl"), key=_natural)
            if len(jsonl) == 1:
                return load_jsonl(jsonl[0])
            raise InvalidInput(f"{path}: no LoCoMo .json files (or a single .jsonl) in it")
        return LabelledSet(path.name, [load_locomo(f) for f in files])
    if not path.is_file():
        raise InvalidInput(f"{path}: no such file or folder")
    if path.suffix == ".json":
        return LabelledSet(path.stem, [load_locomo(path)])
    return load_jsonl(path)


def load_jsonl(path: Path) -> LabelledSet:
    """Read the JSONL labelled-set format.

    Raises:
        InvalidInput: a line is not a valid fact or query record, an id repeats, or a query
            names a fact its partition does not have.
    """
    parts: dict[str, Partition] = {}
    fact_ids: dict[str, set[str]] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"{where}: not JSON ({exc.args[0]})") from exc
        if not isinstance(rec, dict):
            raise InvalidInput(f"{where}: expected a JSON object")
        name = _string(rec, "partition", where) if "partition" in rec else path.stem
        part = parts.setdefault(name, Partition(name))
        known = fact_ids.setdefault(name, set())
        kind = rec.get("type", "fact" if "n" in rec else None)  # no type: an export's line
        if kind == "fact":
            fid = _string(rec, "id", where) if "type" in rec else _number(rec, where)
            if fid in known:
                raise InvalidInput(f"{where}: fact id {fid!r} repeats in partition {name!r}")
            known.add(fid)
            ts = rec.get("ts")
            if ts is not None and not isinstance(ts, str):
                raise InvalidInput(f"{where}: 'ts' must be an ISO 8601 string")
            try:
                when = parse_iso(ts) if ts else None
            except ValueError as exc:
                raise InvalidInput(f"{where}: 'ts' is not ISO 8601") from exc
            part.facts.append(Fact(fid, _string(rec, "text", where), when))
        elif kind == "query":
            relevant = rec.get("relevant")
            if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
                raise InvalidInput(f"{where}: 'relevant' must be a list of fact ids")
            unknown = [r for r in relevant if r not in known]
            if unknown:
                raise InvalidInput(f"{where}: unknown fact ids {unknown} (facts come first)")
            qid = rec.get("id")
            category = rec.get("category")
            part.queries.append(Query(
                str(qid) if qid is not None else f"q{len(part.queries) + 1}",
                _string(rec, "text", where), frozenset(relevant),
                None if category is None else str(category),
            ))
        else:
            raise InvalidInput(f"{where}: 'type' must be \"fact\" or \"query\"")
    return LabelledSet(path.stem, list(parts.values()))


def dump_jsonl(labelled: LabelledSet, path: Path) -> None:
    """Write a labelled set in the JSONL format (facts of a partition before its queries)."""
    from semmem.items import iso

    lines = []
    for part in labelled.partitions:
        for fact in part.facts:
            rec: dict[str, Any] = {"type": "fact", "partition": part.name, "id": fact.id,
                                   "text": fact.text}
            if fact.ts is not None:
                rec["ts"] = iso(fact.ts)
            lines.append(rec)
        for q in part.queries:
            out: dict[str, Any] = {"type": "query", "partition": part.name, "id": q.id,
                                   "text": q.text, "relevant": sorted(q.relevant)}
            if q.category is not None:
                out["category"] = q.category
            lines.append(out)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), "utf-8")


def load_locomo(path: Path) -> Partition:
    """One LoCoMo conversation as a partition (category 5 skipped).

    A fact carries one or more dialog ids; a question's evidence (``"D3:13"``, also the
    dataset's stray forms ``"D8:6; D9:17"`` and ``"D:11:26"``) makes every fact carrying one
    of those ids relevant.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path}: not a LoCoMo JSON file ({exc})") from exc
    if not isinstance(data, dict) or "qa" not in data:
        raise InvalidInput(f"{path}: not a LoCoMo conversation (no 'qa')")
    sessions = sorted(
        (int(m.group(1)), key) for key in data if (m := _SESSION_OBS.fullmatch(key))
    )
    part = Partition(path.stem)
    by_dia: dict[str, list[str]] = {}
    for number, key in sessions:
        when = locomo_time(data.get(f"session_{number}_date_time"))
        for entries in data[key].values():
            for entry in entries:
                text, dias = entry[0], entry[1]
                fid = f"S{number}.{len(part.facts) + 1}"
                part.facts.append(Fact(fid, text, when))
                for dia in _dia_ids(dias):
                    by_dia.setdefault(dia, []).append(fid)
    for i, qa in enumerate(data["qa"], 1):
        category = str(qa.get("category"))
        if category in LOCOMO_SKIPPED_CATEGORIES:
            continue
        evidence = _dia_ids(qa.get("evidence") or [])
        relevant = {fid for dia in evidence for fid in by_dia.get(dia, [])}
        if not relevant:  # evidence only in dialogue turns no observation was drawn from
            part.skipped += 1
            continue
        part.queries.append(Query(f"{path.stem}/q{i}", str(qa["question"]), frozenset(relevant),
                                  category))
    return part


def _dia_ids(value: Any) -> list[str]:
    raw = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in raw:
        if isinstance(item, list):
            out.extend(_dia_ids(item))
        elif isinstance(item, str):
            out.extend(f"D{m.group(1)}:{m.group(2)}" for m in _DIA_ID.finditer(item))
    return out


def locomo_time(value: Any) -> int | None:
    """A LoCoMo session's date-time ("1:56 pm on 8 May, 2023") in epoch ms, ``None`` if none."""
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None
    return int(dt.timestamp() * 1000)


def _string(rec: dict[str, Any], key: str, where: str) -> str:
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{where}: {key!r} must be a non-empty string")
    return value


def _number(rec: dict[str, Any], where: str) -> str:
    """An exported item's number, as the id its queries name."""
    n = rec.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidInput(f"{where}: 'n' must be a positive integer (a line of semmem export)")
    return str(n)


def _natural(path: Path) -> tuple[int, str]:
    digits = re.sub(r"\D", "", path.stem)
    return (int(digits) if digits else 0, path.name)
