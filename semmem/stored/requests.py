"""A ``POST /store`` body: a batch of store operations, checked whole before any runs.

    {"ops": [
      {"op": "put", "namespace": ["users", "alice"], "key": "profile",
       "value": {...} | null, "index": ["text", …] | null, "ttl": minutes | null},
      {"op": "get", "namespace": [...], "key": "…", "refreshTtl": false},
      {"op": "search", "prefix": [...], "query": "…" | null, "filter": {...} | null,
       "limit": 10, "offset": 0, "refreshTtl": false},
      {"op": "list", "conditions": [{"type": "prefix" | "suffix", "path": [...]}],
       "maxDepth": null, "limit": 100, "offset": 0}]}

A put whose value is ``null`` deletes the item. As in LangGraph's stores, a ``limit`` of 0
answers ``[]`` and a ``maxDepth`` of 0 cuts every namespace to ``[]`` (so ``[[]]`` when any
matches). ``index`` is the texts to embed (one piece
each, long ones cut), chosen by the caller (LangGraph: the indexed fields' texts); none or
``[]``: the item is stored unindexed (a query does not score it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from semmem.errors import InvalidArguments, InvalidInput
from semmem.items.address import Address
from semmem.stored.filters import check_filter
from semmem.stored.namespaces import Condition, check_namespace

MAX_VALUE_BYTES = 256 * 1024  # a value's JSON, UTF-8
MAX_INDEX_CHARS = 256 * 1024  # an item's index texts together
MAX_OPS = 10_000
MAX_PAGE = 10_000
MAX_TTL_MINUTES = 100 * 365 * 24 * 60.0


@dataclass(frozen=True)
class StoreOp:
    """One checked operation."""

    op: str
    namespace: tuple[str, ...] = ()
    key: str = ""
    value: dict[str, Any] | None = None
    index: tuple[str, ...] = ()
    ttl: float | None = None
    query: str | None = None
    filter: dict[str, Any] = field(default_factory=dict)
    limit: int = 10
    offset: int = 0
    refresh: bool = False
    conditions: tuple[Condition, ...] = ()
    max_depth: int | None = None

    @property
    def writes(self) -> bool:
        """Whether it writes (a put or a delete)."""
        return self.op == "put"

    def read_only(self) -> StoreOp:
        """The operation as a read-only caller runs it: a get or search that refreshes
        nothing (``refreshTtl`` is a write: it moves the items' expiry)."""
        return replace(self, refresh=False) if self.refresh else self


def _whole(body: dict[str, Any], name: str, default: int, least: int, most: int) -> int:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise InvalidArguments(f"{name} must be an integer from {least} to {most}")
    return value


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise InvalidArguments(f"{name} must be true or false")
    return value


def _put(body: dict[str, Any], namespace: tuple[str, ...], key: str) -> StoreOp:
    value = body.get("value")
    if value is None:
        return StoreOp("put", namespace, key)
    if not isinstance(value, dict):
        raise InvalidArguments("value must be an object (or null to delete)")
    size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8",
                                                                            "surrogatepass"))
    if size > MAX_VALUE_BYTES:
        raise InvalidArguments(f"value is {size} bytes of JSON; at most {MAX_VALUE_BYTES} are "
                               "allowed", {"maxBytes": MAX_VALUE_BYTES})
    index = body.get("index") or []
    if not isinstance(index, list) or not all(isinstance(t, str) for t in index):
        raise InvalidArguments("index must be a list of texts")
    if sum(len(t) for t in index) > MAX_INDEX_CHARS:
        raise InvalidArguments(f"index texts hold more than {MAX_INDEX_CHARS} characters",
                               {"maxChars": MAX_INDEX_CHARS})
    ttl = body.get("ttl")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)
                            or not math.isfinite(ttl) or not 0 < ttl <= MAX_TTL_MINUTES):
        raise InvalidArguments("ttl must be a positive number of minutes (or null)")
    texts = tuple(t for t in index if t.strip())
    return StoreOp("put", namespace, key, value, texts, None if ttl is None else float(ttl))


def parse_op(body: Any) -> StoreOp:
    """One operation of the batch.

    Raises:
        InvalidArguments: an unknown operation, or a field out of its range.
    """
    if not isinstance(body, dict):
        raise InvalidArguments("each operation must be an object")
    kind = body.get("op")
    if kind in ("get", "put"):
        namespace = check_namespace(body.get("namespace"))
        key = Address.of("store", body.get("key")).key
        if kind == "put":
            return _put(body, namespace, key)
        return StoreOp("get", namespace, key, refresh=_flag(body, "refreshTtl"))
    if kind == "search":
        query = body.get("query")
        if query is not None and not isinstance(query, str):
            raise InvalidArguments("query must be a string (or null)")
        return StoreOp("search", check_namespace(body.get("prefix", []), "prefix", empty=True),
                       query=query if query and query.strip() else None,
                       filter=check_filter(body.get("filter")),
                       limit=_whole(body, "limit", 10, 0, MAX_PAGE),
                       offset=_whole(body, "offset", 0, 0, 10**9),
                       refresh=_flag(body, "refreshTtl"))
    if kind == "list":
        raw = body.get("conditions") or []
        if not isinstance(raw, list):
            raise InvalidArguments("conditions must be a list")
        conditions = []
        for c in raw:
            if not isinstance(c, dict) or c.get("type") not in ("prefix", "suffix"):
                raise InvalidArguments("a condition is {\"type\": \"prefix\"|\"suffix\", "
                                       "\"path\": [labels]}")
            conditions.append(Condition(c["type"], check_namespace(c.get("path"), "path")))
        depth = body.get("maxDepth")
        return StoreOp("list", conditions=tuple(conditions),
                       max_depth=None if depth is None else _whole(body, "maxDepth", 0, 0, 64),
                       limit=_whole(body, "limit", 100, 0, MAX_PAGE),
                       offset=_whole(body, "offset", 0, 0, 10**9))
    raise InvalidArguments("op must be one of get, put, search, list", {"op": str(kind)[:40]})


def parse_request(body: Any) -> list[StoreOp]:
    """The batch's operations.

    Raises:
        InvalidInput: not ``{"ops": [...]}``. InvalidArguments: an operation (see ``parse_op``).
    """
    if not isinstance(body, dict) or not isinstance(body.get("ops"), list):
        raise InvalidInput("the body must be {\"ops\": [operations]}")
    ops = body["ops"]
    if len(ops) > MAX_OPS:
        raise InvalidInput(f"at most {MAX_OPS} operations per batch", {"limit": MAX_OPS})
    return [parse_op(op) for op in ops]
