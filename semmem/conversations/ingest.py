"""Ingestion: a session's messages stored as pieces, without an LLM, at embedding speed.

``Conversations(memory).ingest(partition, session, messages, op=…, scope=…)`` cuts each
message (``pieces.cut``), embeds the pieces of the messages the session does not hold yet in
batches on the model thread, and commits them as numbered items in one write per
``CHUNK_PIECES`` pieces (one for any ordinary session), each write deciding on the session's
pieces at the version it commits on (``semmem.keyed.Keyed.commit``): a message whose role and
content the session already holds (a live piece of it) is not stored again, and answers the
numbers it has. The idempotency record commits with the last write, so a replay answers the
first result; a retry of an interrupted multi-chunk ingest stores only what is missing.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem import rules
from semmem.conversations.messages import Message
from semmem.conversations.pieces import AT, DIGEST, MESSAGE, PART, PIECE, ROLE, cut
from semmem.errors import Unavailable
from semmem.items import Item, now_ms
from semmem.keyed.address import KEYED, Address
from semmem.keyed.items import ATTEMPTS, Keyed, Moved
from semmem.rules import Decision, Operation
from semmem.scoped.filtered import scoped
from semmem.scoped.filters import Filter
from semmem.scoped.metadata import METADATA
from semmem.store.rows import NEW, ItemRow
from semmem.store.views import WriteView

if TYPE_CHECKING:
    from semmem.memory import Memory

CHUNK_PIECES = 2048  # pieces per commit
EMBED_BATCH = 128  # pieces per model call: other callers' queries run in between
# Words and punctuation marks: what a model's tokenizer counts at least once each, so texts
# sorted by it pad a batch far less than texts sorted by characters (a long word is one).
_TOKENS = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class Cut:
    """One message cut into pieces, with its digest (how the session knows it)."""

    message: Message
    digest: str
    pieces: tuple[str, ...]

    @property
    def keys(self) -> tuple[str, str]:
        """What a held message is known by: its digest, or its role and pieces' texts (a
        session restored or imported into another store, whose secret keys other digests)."""
        return "d:" + self.digest, "s:" + _shape(self.message.role, self.pieces)


def _shape(role: str, texts: Sequence[str]) -> str:
    # The pieces' characters without whitespace: the message's own, however it was cut (a
    # session stored before the cutter changed is still known).
    return role + "\x00" + "".join("".join(t.split()) for t in texts)


def known(pieces: Sequence[Item], alive: rules.Alive) -> dict[str, list[int]]:
    """The messages a session holds, by each of their keys (``Cut.keys``), with their live
    pieces' numbers: pieces ``alive`` refuses (expired, out of scope) count for none."""
    out: dict[str, list[int]] = {}
    whole: dict[int, list[tuple[int, Item]]] = {}
    for it in pieces:
        piece = it.attrs.get(PIECE)
        if not isinstance(piece, dict) or not alive(it):
            continue
        if isinstance(piece.get(DIGEST), str):
            out.setdefault("d:" + piece[DIGEST], []).append(it.n)
        if isinstance(piece.get(MESSAGE), int) and isinstance(piece.get(PART), int):
            whole.setdefault(piece[MESSAGE], []).append((piece[PART], it))
    for parts in whole.values():
        parts.sort(key=lambda pair: pair[0])
        if [p for p, _ in parts] != list(range(len(parts))):
            continue  # a piece of it is gone: only its digest knows it
        role = parts[0][1].attrs[PIECE].get(ROLE)
        if isinstance(role, str):
            out.setdefault("s:" + _shape(role, [it.text for _, it in parts]),
                           [it.n for _, it in parts])
    return out


def _found(held: dict[str, list[int]], c: Cut) -> list[int] | None:
    for key in c.keys:
        if key in held:
            return held[key]
    return None


class _NeedVectors(Exception):
    """A message the lookup found stored is no longer (forgotten since): embed, decide again."""


class Conversations:
    """Sessions of messages in a memory: ingest (here), list, open and forget
    (``semmem.conversations.sessions``)."""

    def __init__(self, memory: Memory, *, chunk_pieces: int = CHUNK_PIECES) -> None:
        self.memory = memory
        self.keyed = Keyed(memory)
        self.chunk_pieces = chunk_pieces

    def digest(self, message: Message) -> str:
        """A message's digest: keyed by the store's secret, so it confirms no guessed text."""
        body = f"{message.role}\x00{message.content}".encode()
        return hmac.new(self.memory.store.secret, body, hashlib.sha256).hexdigest()[:32]

    async def ingest(self, partition: str, session: Address, messages: Sequence[Message], *,
                     op: Operation | None = None, scope: Filter | None = None,
                     vectors: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
        """Store ``messages`` in ``session`` (appended to what it holds), each as pieces.

        Returns:
            ``{"status": "stored", "sessionId", "items": [[n, …] per message], "count"}``:
            each message's piece numbers (a message already held answers its own; one with no
            text, ``[]``) and the partition's live count.
        Raises:
            IdempotencyMismatch: ``op``'s id was used for another request.
            DeadlineExceeded, Unavailable, QuotaExceeded.
        """
        op = op and op.keyed(self.memory.store.secret)
        cuts = self.cuts(messages)
        replayed = await self._replayed(partition, op)
        if replayed is not None:
            return replayed
        alive = scoped(self.memory.retention.alive(
            await self.memory.retention.max_age(partition)), scope)
        stamp = scope.stamp(None) if scope is not None else None
        vectors = {} if vectors is None else vectors  # piece text → vector
        answered: list[list[int]] = []
        result: dict[str, Any] = {}
        chunks = _chunks(cuts, self.chunk_pieces)
        for i, chunk in enumerate(chunks):
            last = i == len(chunks) - 1
            result = await self._chunk(partition, session, chunk, answered, vectors,
                                       _Stamp(alive, stamp), op if last else None)
            answered = result["items"]
        return await self.memory.retention.counted(partition, result)

    def cuts(self, messages: Sequence[Message]) -> list[Cut]:
        """Each message cut into pieces, with its digest."""
        return [Cut(m, self.digest(m), tuple(cut(m.content))) for m in messages]

    async def ingest_many(self, partition: str,
                          sessions: Sequence[tuple[Address, Sequence[Message]]], *,
                          scope: Filter | None = None) -> list[dict[str, Any]]:
        """``ingest`` of several sessions (a bulk import): the pieces none of them holds yet
        embedded together in batches first, then one write per session (per chunk)."""
        alive = scoped(self.memory.retention.alive(
            await self.memory.retention.max_age(partition)), scope)
        vectors: dict[str, np.ndarray] = {}
        wanted: list[str] = []
        for address, messages in sessions:
            stored = known(await self.keyed.items(await self.keyed.held(partition, address)),
                           alive)
            wanted += [t for c in self.cuts(messages) if _found(stored, c) is None
                       for t in c.pieces]
        await self._embed(wanted, vectors)
        return [await self.ingest(partition, address, messages, scope=scope, vectors=vectors)
                for address, messages in sessions]

    async def _replayed(self, partition: str, op: Operation | None) -> dict[str, Any] | None:
        """The recorded result of ``op``, before anything is embedded."""
        if op is None:
            return None

        def plan(view: WriteView) -> Decision:
            return rules.replay(view, op) or {}

        found = await self.memory._write(partition, plan, op)
        return found or None

    async def _chunk(self, partition: str, session: Address, chunk: list[Cut],
                     before: list[list[int]], vectors: dict[str, np.ndarray], stamp: _Stamp,
                     op: Operation | None) -> dict[str, Any]:
        for _ in range(ATTEMPTS):
            held = await self.keyed.held(partition, session)
            stored = known(await self.keyed.items(held), stamp.alive)
            await self._embed([text for c in chunk if _found(stored, c) is None
                               for text in c.pieces], vectors)
            decide = _decider(session, chunk, before, vectors, stamp, op,
                              self.memory.idempotency_ttl_ms)
            try:
                return await self.keyed.commit(partition, held, decide, op)
            except (Moved, rules.MissingRows, _NeedVectors):
                continue
        raise Unavailable("the session kept changing under this ingest; retry it")

    async def _embed(self, texts: list[str], vectors: dict[str, np.ndarray]) -> None:
        """Vectors of ``texts`` not yet in ``vectors``, in batches sorted by their words and
        marks (about the model's tokens: little padding), one model call per batch."""
        wanted = sorted({t for t in texts if t not in vectors},
                        key=lambda t: (len(_TOKENS.findall(t)), len(t), t))
        for start in range(0, len(wanted), EMBED_BATCH):
            batch = wanted[start:start + EMBED_BATCH]
            found = await self.memory.model.embed(batch)
            vectors.update(zip(batch, found, strict=True))


@dataclass(frozen=True)
class _Stamp:
    """Which held pieces count (live, in the caller's scope) and the metadata new ones carry."""

    alive: rules.Alive
    metadata: dict[str, Any] | None


def _decider(session: Address, chunk: list[Cut], before: list[list[int]],
             vectors: dict[str, np.ndarray], stamp: _Stamp, op: Operation | None,
             ttl_ms: int) -> Any:
    def decide(view: WriteView, pieces: list[Item]) -> Decision:
        held = known(pieces, stamp.alive)
        last = max((p[MESSAGE] for it in pieces if isinstance(p := it.attrs.get(PIECE), dict)
                    and isinstance(p.get(MESSAGE), int)), default=-1)
        n, now, rows = view.hwm, now_ms(), []
        items = [list(numbers) for numbers in before]
        for c in chunk:
            if not c.pieces:  # a message with no text: nothing to store or to know it by
                items.append([])
                continue
            found = _found(held, c)
            if found is not None:
                items.append(found)
                continue
            last += 1
            numbers = []
            for part, text in enumerate(c.pieces):
                vector = vectors.get(text)
                if vector is None:
                    raise _NeedVectors(text[:40])
                n += 1
                attrs: dict[str, Any] = {
                    KEYED: session.public(),
                    PIECE: {ROLE: c.message.role, AT: c.message.at_iso, MESSAGE: last,
                            PART: part, DIGEST: c.digest}}
                if stamp.metadata:
                    attrs[METADATA] = stamp.metadata
                rows.append(ItemRow(n, text, vector, c.message.at, now, 1, attrs=attrs,
                                    created=NEW))
                numbers.append(n)
            held.update(dict.fromkeys(c.keys, numbers))
            items.append(numbers)
        result = {"status": "stored", "sessionId": session.key, "items": items,
                  "count": view.count + len(rows)}
        if not rows and op is None:
            return result
        return rules.mutation(op, result, ttl_ms, rows, n if rows else None)

    return decide


def _chunks(cuts: list[Cut], size: int) -> list[list[Cut]]:
    """Messages in runs of about ``size`` pieces (a message is never split between runs)."""
    out: list[list[Cut]] = [[]]
    held = 0
    for c in cuts:
        if out[-1] and held + len(c.pieces) > size:
            out.append([])
            held = 0
        out[-1].append(c)
        held += len(c.pieces)
    return out
