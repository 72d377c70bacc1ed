"""What ``SemmemStore`` does for a batch of LangGraph store operations, written once for both
clients: each step is a generator that yields the client calls it needs (``Call``: a method
name and its arguments) and receives their results, so ``Client`` runs it blocking and
``AsyncClient`` awaits it on the loop (``drive`` / ``adrive``), with the same behaviour.

A batch is one ``POST /store`` call (``Client.store``): each LangGraph operation as the
server's, the indexed fields' texts taken from each put's value here (LangGraph's own
``get_text_at_path``), the results read back as LangGraph's ``Item``/``SearchItem``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from semmem_client._errors import SemmemError

# LangGraph's operators: any other is refused before the batch is sent, as LangGraph does.
OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


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


def check_filter(filter: dict[str, Any] | None) -> None:
    """Refuse a filter with an operator LangGraph does not have (``ValueError``)."""

    def walk(wanted: Any) -> None:
        if isinstance(wanted, dict):
            for key, inner in wanted.items():
                if isinstance(key, str) and key.startswith("$") and key not in OPERATORS:
                    raise ValueError(f"Unsupported operator: {key}")
                walk(inner)

    walk(filter or {})


def _finite(value: Any) -> Any:
    """A filter's operand as JSON carries it: a non-finite number as ``{"$float": "inf" |
    "-inf" | "nan"}``, which the server reads back as that float (it then equals no stored
    value and never a string: the string ``"inf"`` stays a string, as in LangGraph)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": str(value)}
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def index_texts(value: dict[str, Any], index: Any, fields: list[str] | None) -> list[str]:
    """The texts a put indexes: those at each indexed path of ``value`` (``index``: the put's
    ``False``, a list of paths, or ``None`` for the store's ``fields``, by default ``$``, the
    whole value as JSON), as LangGraph's stores take them."""
    if index is False:
        return []
    paths = list(index) if isinstance(index, list | tuple) else (fields or ["$"])
    texts: list[str] = []
    for path in paths:
        texts.extend(get_text_at_path(value, path if path == "$" else tokenize_path(path)))
    return [t for t in texts if isinstance(t, str) and t.strip()]


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _item(found: dict[str, Any]) -> Item:
    return Item(value=found["value"], key=found["key"], namespace=tuple(found["namespace"]),
                created_at=_when(found["createdAt"]), updated_at=_when(found["updatedAt"]))


def _found(found: dict[str, Any]) -> SearchItem:
    return SearchItem(tuple(found["namespace"]), found["key"], found["value"],
                      _when(found["createdAt"]), _when(found["updatedAt"]), found.get("score"))


def wire(op: Op, fields: list[str] | None) -> dict[str, Any]:
    """One LangGraph operation as the server's (``ValueError``: an unknown filter operator)."""
    if isinstance(op, GetOp):
        return {"op": "get", "namespace": list(op.namespace), "key": op.key,
                "refreshTtl": bool(op.refresh_ttl)}
    if isinstance(op, PutOp):
        out: dict[str, Any] = {"op": "put", "namespace": list(op.namespace), "key": op.key,
                               "value": None if op.value is None else dict(op.value)}
        if op.value is not None:
            out["index"] = index_texts(dict(op.value), op.index, fields)
            out["ttl"] = op.ttl if isinstance(op.ttl, int | float) else None
        return out
    if isinstance(op, SearchOp):
        check_filter(op.filter)
        return {"op": "search", "prefix": list(op.namespace_prefix), "query": op.query,
                "filter": _finite(op.filter), "limit": op.limit, "offset": op.offset,
                "refreshTtl": bool(op.refresh_ttl)}
    if isinstance(op, ListNamespacesOp):
        return {"op": "list", "maxDepth": op.max_depth, "limit": op.limit, "offset": op.offset,
                "conditions": [{"type": c.match_type, "path": list(c.path)}
                               for c in op.match_conditions or ()]}
    raise ValueError(f"unknown operation {type(op).__name__}")


def _result(op: Op, answer: Any) -> Result:
    if isinstance(op, GetOp):
        return None if answer is None else _item(answer)
    if isinstance(op, SearchOp):
        return [_found(f) for f in answer]
    if isinstance(op, ListNamespacesOp):
        return [tuple(ns) for ns in answer]
    return None


class Batch:
    """One batch of operations: one ``POST /store`` call, run by the server in order."""

    def __init__(self, fields: list[str] | None = None) -> None:
        self.fields = fields

    def run(self, ops: Iterable[Op]) -> Steps:
        """The results of ``ops``, in order."""
        ops = list(ops)
        if not ops:
            return []
        sent = [wire(op, self.fields) for op in ops]
        answers = yield Call("store", (sent,))
        return [_result(op, answer) for op, answer in zip(ops, answers, strict=True)]
