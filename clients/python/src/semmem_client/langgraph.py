"""LangGraph's ``BaseStore`` over semmem: ``SemmemStore(Client(url, token, admin_token=…))``
is the ``store=`` of a graph or of ``create_react_agent``/``create_agent``.

    store = SemmemStore(Client("http://127.0.0.1:8080", token, admin_token=admin))
    store.put(("users", "alice"), "units", {"text": "Prefers metric units"})
    store.search(("users", "alice"), query="which units?")   # semmem's own ranking

**Namespaces are partitions**: the labels, each with ``%`` written ``%25`` and ``/`` written
``%2F``, joined by ``/`` — ``("users", "alice")`` is partition ``users/alice`` and
``("alice",)`` is ``alice``, the partition the other adapters use for that user. The mapping
is reversible (``partition_of`` / ``namespace_of``, the one mapping every adapter uses:
``semmem_client._partitions``) and a namespace whose partition would pass
1,024 UTF-8 bytes is refused (``ValueError``).

**Items are facts** whose text is the canonical JSON ``{"key": …, "value": …}`` (sorted keys,
no spaces; ``"ttl"`` and ``"index": false`` when given), so ``search(query=…)`` ranks them with
semmem's model and lexical evidence, and ``recall`` shows them to models like any fact. A text
holds at most 2,000 characters; a larger item is refused by the server (``InvalidArguments``).
semmem stores a text once per partition (compared case-insensitively, whitespace collapsed):
two keys whose JSON differs only that way cannot both be stored (``ValueError``). Facts that
are not store items (remembered by a model, say) are left out of ``get`` and ``search``.

Reads go through the admin API (``export``; the client needs ``admin_token``), writes through
the provider (``remember``) and the admin API (an edit: new text, expiry), deletes through
``forget`` (durably gone, as every forget). ``ttl`` (minutes) becomes the fact's
``expiresAt``; a read with ``refresh_ttl`` moves it forward (an owner's edit: it also moves
``updated_at``). ``index=False`` leaves an item out of query searches (semmem embeds it
anyway); a field list for ``index`` is read as ``True``: semmem embeds the whole text. The async
methods run the blocking client in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from semmem_client._client import Client
from semmem_client._errors import Conflict, NotFound
from semmem_client._partitions import namespace_of as namespace_of
from semmem_client._partitions import partition_of as partition_of

SEARCH_LIMIT = 50  # the search tool's largest page: the best 50 facts of each partition


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


def _expires_at(ttl_minutes: float | None) -> str | None:
    if ttl_minutes is None:
        return None
    at = datetime.now(UTC) + timedelta(minutes=ttl_minutes)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


_OPS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
        "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether a value passes a search filter: equality, or ``$eq``/``$ne``/``$gt``/``$gte``/
    ``$lt``/``$lte`` per field (a dotted field reads nested values)."""
    for field, wanted in (filter or {}).items():
        got: Any = value
        for part in field.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        if isinstance(wanted, dict) and wanted and all(k in _OPS for k in wanted):
            try:
                if not all(_OPS[op](got, operand) for op, operand in wanted.items()):
                    return False
            except TypeError:
                return False
        elif got != wanted:
            return False
    return True


def _fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" \
        else namespace[len(namespace) - len(path):]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


class SemmemStore(BaseStore):
    """LangGraph's store over a semmem server (see the module docstring for the mapping)."""

    supports_ttl = True

    def __init__(self, client: Client, *, ttl: TTLConfig | None = None) -> None:
        if not client._admin:
            raise ValueError("SemmemStore reads items by key through the admin API: give the "
                             "Client an admin_token (or set SEMMEM_ADMIN_TOKEN)")
        self.client = client
        self.ttl_config = ttl

    # ----- one batch: each partition read at most once -----------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; a batch reads each partition it touches once."""
        read: dict[str, dict[str, list[Entry]]] = {}

        def entries(partition: str) -> dict[str, list[Entry]]:
            if partition not in read:
                by_key: dict[str, list[Entry]] = {}
                for fact in self.client.export(partition):
                    entry = entry_of(dict(fact))
                    if entry is not None:
                        by_key.setdefault(entry.key, []).append(entry)
                read[partition] = by_key
            return read[partition]

        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, entries))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, entries))
            elif isinstance(op, PutOp):
                self._put(op, entries(partition_of(op.namespace)))
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread (the client is blocking)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ----- the operations -------------------------------------------------------------------
    def _get(self, op: GetOp, entries: Any) -> Item | None:
        found = entries(partition_of(op.namespace)).get(op.key)
        if not found:
            return None
        entry: Entry = found[-1]  # the latest, should two processes have put the key at once
        self._refresh(op.namespace, entry, op.refresh_ttl)
        return entry.item(op.namespace)

    def _put(self, op: PutOp, by_key: dict[str, list[Entry]]) -> None:
        partition = partition_of(op.namespace)
        old = by_key.pop(op.key, [])
        if op.value is None:
            for entry in old:
                self._forget(partition, entry.n)
            return
        ttl = op.ttl if isinstance(op.ttl, int | float) else None
        text = fact_text(op.key, dict(op.value), ttl, op.index is not False)
        if old:
            keep, *extra = old[::-1]
            for entry in extra:
                self._forget(partition, entry.n)
            edited = self.client.edit(partition, keep.n, {"text": text,
                                                          "expiresAt": _expires_at(ttl)})
            fact = edited["item"]
        else:
            stored = self.client.remember(partition, text)
            if stored.get("existing"):
                raise ValueError(f"semmem already holds this text (compared case-insensitively, "
                                 f"whitespace collapsed) under another key: cannot store "
                                 f"{op.key!r} beside it")
            fact = self.client.edit(partition, stored["n"], {"expiresAt": _expires_at(ttl)}
                                    )["item"] if ttl is not None \
                else self.client.get(partition, stored["n"])
        written = entry_of(dict(fact)) if fact is not None else None
        if written is not None:
            by_key[op.key] = [written]

    def _forget(self, partition: str, n: int) -> None:
        with contextlib.suppress(NotFound, Conflict):  # gone already: another process's delete
            self.client.forget(partition, n)

    def _refresh(self, namespace: tuple[str, ...], entry: Entry, refresh: bool | None) -> None:
        if refresh and entry.ttl is not None:
            self.client.edit(partition_of(namespace), entry.n,
                             {"expiresAt": _expires_at(entry.ttl)})

    def _search(self, op: SearchOp, entries: Any) -> list[SearchItem]:
        namespaces = [ns for ns in self._namespaces()
                      if ns[:len(op.namespace_prefix)] == tuple(op.namespace_prefix)]
        scored: list[tuple[float | None, datetime, SearchItem, Entry]] = []
        query = (op.query or "").strip()
        for ns in namespaces:
            partition = partition_of(ns)
            by_n = {e.n: e for found in entries(partition).values() for e in found[-1:]
                    if matches(e.value, op.filter)}
            scores: dict[int, float] = {}
            if query and by_n:
                hits = self.client.search(partition, query, SEARCH_LIMIT)["items"]
                scores = {h["n"]: h["score"] for h in hits if h["n"] in by_n
                          and by_n[h["n"]].index}
            for n, entry in by_n.items():
                score = scores.get(n)
                scored.append((score, entry.updated_at, entry.found(ns, score), entry))
        # Ranked hits first, best first; then the rest (unranked, or below the best 50 of a
        # partition), newest first.
        scored.sort(key=lambda s: (s[0] is None, -(s[0] or 0.0),
                                   -s[1].timestamp()))
        page = scored[op.offset:op.offset + op.limit]
        for _score, _at, found, entry in page:
            self._refresh(found.namespace, entry, op.refresh_ttl)
        return [found for _score, _at, found, _entry in page]

    def _namespaces(self) -> list[tuple[str, ...]]:
        names: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = self.client.partitions(offset, 1000)
            names.extend(page["partitions"])
            offset = page["next"]
        return [namespace_of(name) for name in names]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {ns for ns in self._namespaces()
                 if all(_fits(ns, c) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            found = {ns[:op.max_depth] for ns in found}
        return sorted(found)[op.offset:op.offset + op.limit]
