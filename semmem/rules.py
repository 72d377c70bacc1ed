"""The rules of each write, decided on a write view: replays, duplicates, cursor checks and
numbering. Pure functions of the view; ``Memory`` hands them to the store's CAS write, which
calls them again on the latest version after a lost race."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from semmem.audience import Caller, counted, editor
from semmem.contract import DEADLINE_HORIZON_MS, sha256_hex
from semmem.errors import IdempotencyMismatch, InvalidArguments
from semmem.items import Item, dedupe_key, now_ms
from semmem.ranking.similar import Near, nearest
from semmem.store.rows import NEW, ItemRow, Mutation, Plan, op_key
from semmem.store.views import ItemSet, OpRecord, WriteView
from semmem.targets import check_editable, check_target, not_found, tombstone

Decision = Mutation | dict[str, Any]  # rows to commit, or a result to answer without writing
Alive = Callable[[Item], bool]  # whether an item has not expired (retention)


@dataclass(frozen=True)
class Operation:
    """Identity of a write for idempotency: who asked (id) and exactly what (fingerprint)."""

    operation_id: str
    fingerprint: str
    deadline_ms: int | None = None
    # Before keying: what a record written before records were keyed holds (a retry across
    # the upgrade still replays).
    unkeyed: str | None = None
    # The caller's scope (``Filter.digest``; "" for none): part of the record's key and the
    # fingerprint, so one scope's ids are its own: another scope sending the same id is a
    # different operation (no replay of the first's result, no 409 saying the id was used).
    within: str = ""

    @classmethod
    def of(
        cls, operation_id: str, tool: str, arguments: Any, cursor: str | None,
        deadline_ms: int | None = None, within: str = "",
    ) -> Operation:
        """Fingerprint a tool call: same tool, arguments and cursor (and scope) give the same
        fingerprint."""
        call = [tool, arguments, cursor, *([within] if within else [])]
        body = json.dumps(call, sort_keys=True, ensure_ascii=False)
        return cls(operation_id, sha256_hex(body), deadline_ms, within=within)

    @property
    def key(self) -> str:
        """The row key of the operation's record (a scoped caller's within its scope)."""
        return op_key(f"{self.within}/{self.operation_id}" if self.within
                      else self.operation_id)

    def keyed(self, key: bytes) -> Operation:
        """The operation with its fingerprint keyed by the store's secret (HMAC-SHA256): what
        its record keeps, so a record confirms no guessed text to someone without the key."""
        mac = hmac.new(key, self.fingerprint.encode(), hashlib.sha256).hexdigest()
        return Operation(self.operation_id, "k" + mac, self.deadline_ms, self.fingerprint,
                         self.within)


def replay(view: WriteView, op: Operation | None, alive: Alive | None = None
           ) -> dict[str, Any] | None:
    """The recorded result of ``op`` if it was already applied; its hints only those
    ``alive`` keeps (the caller's scope, unexpired).

    Raises:
        IdempotencyMismatch: the id was used for a different call.
    """
    if op is None:
        return None
    record = view.ops.get(op.key)
    if record is None:
        return None
    if record.fingerprint not in (op.fingerprint, op.unkeyed):
        raise IdempotencyMismatch(
            "operationId was already used with a different tool, arguments or cursor",
            {"operationId": op.operation_id},
        )
    return _shown(view, record.result_json(), alive or _always)


class MissingRecords(Exception):
    """A write names records (a session's ledger) its lookup did not read: decide again with
    these keys looked up too."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"look up {len(keys)} records")
        self.keys = keys


class MissingRows(Exception):
    """A replay names hinted facts its write did not look up (another replica's cached view
    found other candidates): decide again with these numbers looked up too."""

    def __init__(self, numbers: list[int]) -> None:
        super().__init__(f"look up items {numbers}")
        self.numbers = numbers


def _shown(view: WriteView, result: dict[str, Any], alive: Alive) -> dict[str, Any]:
    """A recorded result as the write answered it: each ``similar`` entry's text is read back
    from the fact it names, if that fact is still the revision it was and ``alive`` keeps it
    (a record keeps no fact text, so a forgotten or replaced text never returns through a
    replay, nor one outside the caller's scope)."""
    refs = result.get("similar")
    if not refs:
        return result
    missing = [ref["n"] for ref in refs
               if view.get(ref["n"]) is None and ref["n"] not in view.tombstones]
    if missing:
        raise MissingRows(missing)
    back = [Hint.recorded(ref).read_back(view, alive) for ref in refs]
    shown = [hint.answer() for hint in back if hint is not None]
    return with_similar({k: v for k, v in result.items() if k != "similar"}, shown)


@dataclass(frozen=True)
class Hint:
    """One fact a write lists as one it probably restates or supersedes: what the write
    answers (number, text, score) and what its idempotency record keeps (number, revision,
    score: no text, which a replay reads back from the fact)."""

    n: int
    revision: int
    score: float
    text: str | None = None

    @classmethod
    def of(cls, near: Near) -> Hint:
        """The hint of a listed fact (score to 4 decimals, as answered and recorded)."""
        return cls(near.item.n, near.item.revision, round(near.score, 4), near.item.text)

    @classmethod
    def recorded(cls, ref: dict[str, Any]) -> Hint:
        """The hint a record names (without its text)."""
        return cls(ref["n"], ref["revision"], ref["score"])

    def read_back(self, view: WriteView, alive: Alive) -> Hint | None:
        """The hint with its fact's text, if the fact is still recallable (and ``alive``) at
        the revision it was listed at (else none: a changed or forgotten fact is left out)."""
        item = view.get(self.n)
        if item is None or not item.surfaced or item.revision != self.revision \
                or not alive(item):
            return None
        return replace(self, text=item.text)

    def answer(self) -> dict[str, Any]:
        """The entry of the write's ``similar`` list."""
        return {"n": self.n, "text": self.text, "score": self.score}

    def record(self) -> dict[str, Any]:
        """The entry the idempotency record keeps."""
        return {"n": self.n, "revision": self.revision, "score": self.score}


def record(op: Operation | None, result: dict[str, Any], ttl_ms: int) -> OpRecord | None:
    """The idempotency record that commits with a write (none without an operation id); its
    ``similar`` entries (``Hint``) name facts by number and revision, without their text."""
    if op is None:
        return None
    now = now_ms()
    # Kept past the deadline, but never further than the horizon a deadline may have.
    expires = max(now + ttl_ms, min(op.deadline_ms or 0, now + DEADLINE_HORIZON_MS))
    kept = {k: v for k, v in result.items() if k != "similar"}
    if "similar" in result:
        kept["similar"] = [hint.record() for hint in result["similar"]]
    return OpRecord(op.key, op.fingerprint,
                    json.dumps(kept, ensure_ascii=False), expires)


def facts(view: WriteView) -> int:
    """The live items a fact's write answers as its memory's ``count``: the model's, never
    the application's store items (``semmem.audience``)."""
    return counted(Caller.MODEL, view.live, view.application)


def merged_attrs(item: Item, changes: dict[str, Any]) -> dict[str, Any]:
    """An item's record fields after ``changes`` (``None`` clears a field)."""
    merged = dict(item.attrs)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def vector_of(view: WriteView, n: int) -> np.ndarray:
    """The stored vector of looked-up item ``n``."""
    idx = view.index_of(n)
    assert idx is not None
    vector: np.ndarray = view.vectors[idx]
    return vector


def as_numbers(values: Sequence[Any]) -> list[int]:
    """The valid item numbers among ``values`` (the rest are refused by the write itself)."""
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 1]


def mutation(op: Operation | None, result: dict[str, Any], ttl_ms: int,
             items: Sequence[ItemRow] = (), hwm: int | None = None) -> Mutation:
    """A write's rows, committed with the idempotency record of ``op`` if there is one; the
    write answers ``result`` with its ``similar`` hints (``Hint``) as answered entries."""
    answer = result
    if "similar" in result:
        answer = {**result, "similar": [hint.answer() for hint in result["similar"]]}
    return Mutation(items=list(items), op=record(op, result, ttl_ms), hwm=hwm, result=answer)


def _always(item: Item) -> bool:
    return True


@dataclass(frozen=True)
class Hints:
    """What a write's ``similar`` list is chosen from: the candidates' numbers (looked up with
    the write) and the least cosine a listed fact has (the threshold, or the partition's
    ``cutoff`` when that is higher)."""

    candidates: Sequence[int] = ()
    threshold: float = 1.0

    def listed(self, view: WriteView, vector: np.ndarray, written: int,
               alive: Alive = _always) -> list[Hint]:
        """The hints: candidates still recallable (and not expired: ``alive``) at the decided
        version, other than the written fact, scored on their current vectors, best first."""
        rows = [i for n in self.candidates if n != written
                and (i := view.index_of(n)) is not None and alive(view.items[i])]
        found = ItemSet([view.items[i] for i in rows],
                        view.vectors[rows].reshape(-1, view.vectors.shape[1]))
        return [Hint.of(near) for near in nearest(found, vector, self.threshold)]


def with_similar(result: dict[str, Any], similar: Sequence[Any]) -> dict[str, Any]:
    """``result`` with its ``similar`` list; the key is left out when nothing is listed."""
    return {**result, "similar": similar} if similar else result


def remember(text: str, vector: np.ndarray, fields: dict[str, Any], op: Operation | None,
             ttl_ms: int, hints: Hints = Hints(), alive: Alive = _always) -> Plan:
    """Store ``text`` under the next number, or answer with the item that already has it; a
    new fact lists the facts it probably restates or supersedes. ``alive``: whether an item
    has not expired (an expired one is no duplicate: it is gone from every read)."""

    def plan(view: WriteView) -> Decision:
        replayed = replay(view, op, alive)
        if replayed is not None:
            return replayed
        same = view.find_text(text)
        if same is not None and not (same.surfaced and alive(same)):
            # Another copy may be one ``alive`` keeps (the caller's scope's, where two scopes
            # hold the text): the write looked up every row with the text.
            key = dedupe_key(text)
            same = next((it for it in view.items if it.surfaced and alive(it)
                         and dedupe_key(it.text) == key), None)
        # Only an item recall can show is a duplicate: the text of a hidden one (inactive,
        # held, merged) becomes a new, visible item, and the hidden record stays as it is.
        if same is not None and same.surfaced and alive(same):
            result = {"status": "stored", "n": same.n, "count": facts(view), "existing": True}
            return result if op is None else mutation(op, result, ttl_ms)
        n, ts = view.hwm + 1, now_ms()
        result = with_similar({"status": "stored", "n": n, "count": facts(view) + 1},
                              hints.listed(view, vector, n, alive))
        return mutation(op, result, ttl_ms,
                        [ItemRow(n, text, vector, ts, ts, 1, attrs=fields, created=NEW)], n)

    return plan


def update(n: int, text: str | None, vector: np.ndarray | None, changes: dict[str, Any],
           cursor_seq: int | None, op: Operation | None, ttl_ms: int, owner: bool = True,
           hints: Hints = Hints(), alive: Alive = _always, within: Alive | None = None) -> Plan:
    """Replace item ``n``'s text and/or record fields, keeping its number; a new text lists
    the other facts it probably restates or supersedes (an identical one included: update
    does not deduplicate). An item ``alive`` refuses (expired: an edit must not bring it
    back; out of a binding's scope) is not found, as a forget finds it; ``within``: the
    binding's scope (``check_target``)."""

    def plan(view: WriteView) -> Decision:
        replayed = replay(view, op, alive)
        if replayed is not None:
            return replayed
        item = check_target(view, n, cursor_seq, within, editor(owner))
        if not alive(item):
            raise not_found(n)
        check_editable(item, owner)
        row = ItemRow(
            n, text if text is not None else item.text,
            vector if vector is not None else vector_of(view, n),
            item.ts, now_ms(), item.revision + 1, attrs=merged_attrs(item, changes),
            created=item.born,
        )
        similar = hints.listed(view, vector, n, alive) if vector is not None else []
        result = with_similar({"status": "stored", "n": n, "count": facts(view)}, similar)
        return mutation(op, result, ttl_ms, [row])

    return plan


def merge(n: int, into: int) -> Plan:
    """Mark item ``n`` merged into the live item ``into``, both checked in the same view."""

    edit = update(n, None, None, {"mergedInto": into}, None, None, 0)

    def plan(view: WriteView) -> Decision:
        check_target(view, n, None)  # a missing ``n`` is reported before a missing ``into``
        if isinstance(into, bool) or not isinstance(into, int) or view.get(into) is None:
            raise InvalidArguments(f"item {into} does not exist")
        return edit(view)

    return plan


def forget(n: int, cursor_seq: int | None, op: Operation | None, ttl_ms: int,
           owner: bool = True, within: Alive | None = None) -> Plan:
    """Replace item ``n`` by a tombstone; its number is never reused. ``within``: a binding's
    scope, outside which no number is found (``check_target``)."""

    def plan(view: WriteView) -> Decision:
        replayed = replay(view, op)
        if replayed is not None:
            return replayed
        item = check_target(view, n, cursor_seq, within, editor(owner))
        check_editable(item, owner)
        row = tombstone(item, now_ms())
        left = facts(view) - (0 if item.application else 1)  # an owner's forget of any item
        result = {"status": "stored", "n": n, "count": left, "forgotten": True}
        return mutation(op, result, ttl_ms, [row])

    return plan


def expire(numbers: Sequence[int], alive: Alive) -> Plan:
    """Forget those of ``numbers`` that are still live items and expired at the decided
    version (the retention sweep): tombstones like a forget's, in one commit."""

    def plan(view: WriteView) -> Decision:
        now = now_ms()
        rows = [tombstone(it, now)
                for n in numbers if (it := view.get(n)) is not None and not alive(it)]
        result = {"expired": [r.n for r in rows], "count": view.count - len(rows)}
        return Mutation(items=rows, result=result) if rows else result

    return plan
