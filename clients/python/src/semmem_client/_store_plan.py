"""What ``SemmemStore`` does for a batch of LangGraph store operations, written once for both
clients: each step is a generator that yields the client calls it needs (``Call``: a method
name and its arguments) and receives their results, so ``Client`` runs it blocking and
``AsyncClient`` awaits it on the loop (``drive`` / ``adrive``), with the same behaviour.

The mapping (items are facts whose text is the canonical JSON ``{"key", "value"}``) is the
module docstring's of ``semmem_client.langgraph``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from semmem_client._errors import Conflict, NotFound, SemmemError
from semmem_client._partitions import namespace_of, partition_of

SEARCH_LIMIT = 50  # the search tool's largest page: the best 50 facts of each partition


@dataclass(frozen=True)
class Call:
    """One client call a step needs: ``getattr(client, name)(*args, **kwargs)``."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Steps = Generator[Call, Any, Any]


def drive(steps: Steps, client: Any) -> Any:
    """Run ``steps`` with a blocking client; a call's error is raised inside the step."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            call = steps.throw(failure) if failure is not None else steps.send(answer)
        except StopIteration as done:
            return done.value
        answer, failure = None, None
        try:
            answer = getattr(client, call.name)(*call.args, **call.kwargs)
        except SemmemError as exc:
            failure = exc


async def adrive(steps: Steps, client: Any) -> Any:
    """Run ``steps`` with an ``AsyncClient``, each call awaited on the running loop."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        try:
            call = steps.throw(failure) if failure is not None else steps.send(answer)
        except StopIteration as done:
            return done.value
        answer, failure = None, None
        try:
            method: Callable[..., Awaitable[Any]] = getattr(client, call.name)
            answer = await method(*call.args, **call.kwargs)
        except SemmemError as exc:
            failure = exc


@dataclass
class Entry:
    """One store item as a fact: its number, key, value and times."""

    n: int
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    ttl: float | None = None
    index: bool = True

    def item(self, namespace: tuple[str, ...]) -> Item:
        """As LangGraph's ``Item``."""
        return Item(value=self.value, key=self.key, namespace=namespace,
                    created_at=self.created_at, updated_at=self.updated_at)

    def found(self, namespace: tuple[str, ...], score: float | None) -> SearchItem:
        """As LangGraph's ``SearchItem``."""
        return SearchItem(namespace, self.key, self.value, self.created_at, self.updated_at,
                          score)


def fact_text(key: str, value: dict[str, Any], ttl: float | None, index: bool) -> str:
    """The text an item is stored as."""
    body: dict[str, Any] = {"key": key, "value": value}
    if ttl is not None:
        body["ttl"] = ttl
    if not index:
        body["index"] = False
    return json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def entry_of(fact: dict[str, Any]) -> Entry | None:
    """A fact read back as a store item, ``None`` for a fact that is not one."""
    try:
        body = json.loads(fact["text"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (isinstance(body, dict) and isinstance(body.get("key"), str)
            and isinstance(body.get("value"), dict)):
        return None
    ttl = body.get("ttl")
    return Entry(fact["n"], body["key"], body["value"], _when(fact["ts"]),
                 _when(fact["updated"]), ttl if isinstance(ttl, int | float) else None,
                 body.get("index") is not False)


def expires_at(ttl_minutes: float | None) -> str | None:
    """The ISO 8601 instant ``ttl_minutes`` from now (``None``: no expiry)."""
    if ttl_minutes is None:
        return None
    at = datetime.now(UTC) + timedelta(minutes=ttl_minutes)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


# LangGraph's operators, as its InMemoryStore and PostgresStore apply them.
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: bool(a == b), "$ne": lambda a, b: bool(a != b),
    "$gt": lambda a, b: _number(a) > _number(b), "$gte": lambda a, b: _number(a) >= _number(b),
    "$lt": lambda a, b: _number(a) < _number(b), "$lte": lambda a, b: _number(a) <= _number(b),
}


def check_filter(filter: dict[str, Any] | None) -> None:
    """Refuse a filter with an operator LangGraph does not have (``ValueError``)."""

    def walk(wanted: Any) -> None:
        if isinstance(wanted, dict):
            for key, inner in wanted.items():
                if isinstance(key, str) and key.startswith("$") and key not in _OPS:
                    raise ValueError(f"Unsupported operator: {key}")
                walk(inner)

    walk(filter or {})


def _contains(got: Any, wanted: Any) -> bool:
    """LangGraph's comparison: operators, nested objects by containment, the rest equal."""
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            try:
                return all(_OPS[op](got, operand) for op, operand in wanted.items())
            except (TypeError, ValueError):
                return False
        return isinstance(got, dict) and all(_contains(got.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return isinstance(got, list | tuple) and len(got) == len(wanted) and all(
            _contains(g, w) for g, w in zip(got, wanted, strict=True))
    return bool(got == wanted)


def matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether a value passes a search filter (a field that is not there reads as a dotted
    path into nested objects, as SQLite's store reads it)."""
    for name, wanted in (filter or {}).items():
        got: Any = value.get(name)
        if name not in value and "." in name:
            got = value
            for part in name.split("."):
                got = got.get(part) if isinstance(got, dict) else None
        if not _contains(got, wanted):
            return False
    return True


def fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether a namespace matches a prefix/suffix condition (``*``: any one label)."""
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" \
        else namespace[len(namespace) - len(path):]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


class Batch:
    """One batch of operations: each partition it touches is read at most once."""

    def __init__(self) -> None:
        self.read: dict[str, dict[str, list[Entry]]] = {}

    def run(self, ops: Iterable[Op]) -> Steps:
        """The results of ``ops``, in order."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append((yield from self._get(op)))
            elif isinstance(op, SearchOp):
                check_filter(op.filter)
                results.append((yield from self._search(op)))
            elif isinstance(op, PutOp):
                yield from self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(op)))
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        return results

    def _entries(self, partition: str) -> Steps:
        if partition not in self.read:
            by_key: dict[str, list[Entry]] = {}
            for fact in (yield Call("export", (partition,))):
                entry = entry_of(dict(fact))
                if entry is not None:
                    by_key.setdefault(entry.key, []).append(entry)
            self.read[partition] = by_key
        return self.read[partition]

    def _get(self, op: GetOp) -> Steps:
        found = (yield from self._entries(partition_of(op.namespace))).get(op.key)
        if not found:
            return None
        entry: Entry = found[-1]  # the latest, should two processes have put the key at once
        yield from self._refresh(op.namespace, entry, op.refresh_ttl)
        return entry.item(op.namespace)

    def _put(self, op: PutOp) -> Steps:
        partition = partition_of(op.namespace)
        by_key = yield from self._entries(partition)
        old = by_key.pop(op.key, [])
        if op.value is None:
            for entry in old:
                yield from self._forget(partition, entry.n)
            return None
        ttl = op.ttl if isinstance(op.ttl, int | float) else None
        text = fact_text(op.key, dict(op.value), ttl, op.index is not False)
        if old:
            keep, *extra = old[::-1]
            for entry in extra:
                yield from self._forget(partition, entry.n)
            edited = yield Call("edit", (partition, keep.n, {"text": text,
                                                            "expiresAt": expires_at(ttl)}))
            fact = edited["item"]
        else:
            stored = yield Call("remember", (partition, text))
            if stored.get("existing"):
                raise ValueError(f"semmem already holds this text (compared case-insensitively, "
                                 f"whitespace collapsed) under another key: cannot store "
                                 f"{op.key!r} beside it")
            if ttl is not None:
                fact = (yield Call("edit", (partition, stored["n"],
                                            {"expiresAt": expires_at(ttl)})))["item"]
            else:
                fact = yield Call("get", (partition, stored["n"]))
        written = entry_of(dict(fact)) if fact is not None else None
        if written is not None:
            by_key[op.key] = [written]
        return None

    def _forget(self, partition: str, n: int) -> Steps:
        with contextlib.suppress(NotFound, Conflict):  # gone already: another process's delete
            yield Call("forget", (partition, n))

    def _refresh(self, namespace: tuple[str, ...], entry: Entry, refresh: bool | None) -> Steps:
        if refresh and entry.ttl is not None:
            yield Call("edit", (partition_of(namespace), entry.n,
                                {"expiresAt": expires_at(entry.ttl)}))

    def _search(self, op: SearchOp) -> Steps:
        prefix = tuple(op.namespace_prefix)
        namespaces = [ns for ns in (yield from self._namespaces()) if ns[:len(prefix)] == prefix]
        scored: list[tuple[float | None, datetime, SearchItem, Entry]] = []
        query = (op.query or "").strip()
        for ns in namespaces:
            partition = partition_of(ns)
            by_n = {e.n: e for found in (yield from self._entries(partition)).values()
                    for e in found[-1:] if matches(e.value, op.filter)}
            scores: dict[int, float] = {}
            if query and by_n:
                hits = (yield Call("search", (partition, query, SEARCH_LIMIT)))["items"]
                scores = {h["n"]: h["score"] for h in hits if h["n"] in by_n
                          and by_n[h["n"]].index}
            for n, entry in by_n.items():
                score = scores.get(n)
                scored.append((score, entry.updated_at, entry.found(ns, score), entry))
        # Ranked hits first, best first; then the rest (unranked, or below the best 50 of a
        # partition), newest first.
        scored.sort(key=lambda s: (s[0] is None, -(s[0] or 0.0), -s[1].timestamp()))
        page = scored[op.offset:op.offset + op.limit]
        for _score, _at, found, entry in page:
            yield from self._refresh(found.namespace, entry, op.refresh_ttl)
        return [found for _score, _at, found, _entry in page]

    def _namespaces(self) -> Steps:
        names: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = yield Call("partitions", (offset, 1000))
            names.extend(page["partitions"])
            offset = page["next"]
        return [namespace_of(name) for name in names]

    def _list_namespaces(self, op: ListNamespacesOp) -> Steps:
        found = {ns for ns in (yield from self._namespaces())
                 if all(fits(ns, c) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            found = {ns[:op.max_depth] for ns in found}
        return sorted(found)[op.offset:op.offset + op.limit]
