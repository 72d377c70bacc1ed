"""Ingestion: a session's messages stored as pieces, without an LLM, at embedding speed.

``Conversations(host).ingest(partition, session, messages, op=…, scope=…)`` answers a replay
first (before any cutting), cuts each message off the event loop (``pieces.cut``), embeds the
pieces of the messages the session does not hold yet in batches on the model thread (the
deadline checked between batches), then commits every new piece with the idempotency record
in **one** write (``semmem.keyed.Keyed.commit``), decided on the session's pieces at the
version it commits on. So an ingest is one operation: its deadline and the partition's quota
are judged for the whole before anything is stored, a refusal stores nothing, and while it is
incomplete none of it is visible. A delete of the partition between the ingest's lookup and
its commit refuses it (409, nothing stored) rather than landing part of a session in the
partition made again.

A message is known by its exact text (``Cut.keys``): a message the session holds (a live
piece of it) is not stored again and answers its numbers; a message whose pieces were
forgotten or expired (``conversations.forgotten``) is not stored again and answers the
numbers of its pieces still live (none, usually).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from semmem import rules
from semmem.conversations.forgotten import digest, forgotten, mac_of, shape_digest
from semmem.conversations.host import Host
from semmem.conversations.ledgers import SessionLedgers
from semmem.conversations.messages import Message
from semmem.conversations.pieces import AT, DIGEST, MESSAGE, PART, PIECE, ROLE, cut
from semmem.errors import Conflict, DeadlineExceeded, Unavailable
from semmem.items import Item, now_ms
from semmem.items.address import KEYED, Address
from semmem.items.filters import Filter
from semmem.items.metadata import METADATA
from semmem.keyed.items import ATTEMPTS, Held, Moved
from semmem.offload import off_loop
from semmem.rules import Decision, Operation
from semmem.store.rows import NEW, ItemRow
from semmem.store.views import WriteView

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
    shaped: str = ""  # its digest by its pieces (``forgotten.shape_digest``): an import's

    @property
    def keys(self) -> tuple[str, ...]:
        """What a held message is known by: its digest's HMAC (its exact role and content),
        its digest by its pieces (what an import gives a message of another store's), or its
        role and pieces' exact texts (for a message held with another store's digest: a
        session imported from it that lacks a piece of it)."""
        return ("d:" + self.digest[-32:], "d:" + self.shaped[-32:],
                "s:" + _shape(self.message.role, self.pieces))


def _shape(role: str, texts: Sequence[str]) -> str:
    return role + "\x00" + "\x01".join(texts)


@dataclass(frozen=True)
class Known:
    """What a session holds: its messages by each of their keys with their live pieces'
    numbers, and the keys of messages gone (a piece forgotten or expired)."""

    live: dict[str, list[int]]
    gone: set[str]

    def find(self, c: Cut) -> list[int] | None:
        """The live numbers ``c`` is held with (``[]`` and more: gone), ``None``: new."""
        for key in c.keys:
            if key in self.live:
                return self.live[key]
            if key in self.gone:
                return []
        return None


def known(pieces: Sequence[Item], alive: rules.Alive, within: rules.Alive,
          secret: bytes, ledger: Collection[str] = ()) -> Known:
    """The messages a session holds, by each of their keys (``Cut.keys``), with their live
    pieces' numbers: pieces ``within`` refuses (another scope's) count for nothing, pieces
    ``alive`` refuses (expired) make their message gone, as the ``ledger`` (HMACs of the
    messages forgotten) does."""
    held = Known({}, {"d:" + m for m in ledger})
    whole: dict[int, list[tuple[int, Item]]] = {}
    for it in pieces:
        piece = it.attrs.get(PIECE)
        if not isinstance(piece, dict) or not within(it):
            continue
        mac = mac_of(piece[DIGEST], secret) if isinstance(piece.get(DIGEST), str) else None
        if not alive(it):
            if mac is not None:
                held.gone.add("d:" + mac)
            continue
        if mac is not None:
            held.live.setdefault("d:" + mac, []).append(it.n)
            if len(piece[DIGEST]) != 32:
                continue  # its digest is this store's: the exact text is known by it
        if isinstance(piece.get(MESSAGE), int) and isinstance(piece.get(PART), int):
            whole.setdefault(piece[MESSAGE], []).append((piece[PART], it))
    for parts in whole.values():
        parts.sort(key=lambda pair: pair[0])
        if [p for p, _ in parts] != list(range(len(parts))):
            continue  # a piece of it is gone: only its digest knows it
        role = parts[0][1].attrs[PIECE].get(ROLE)
        if isinstance(role, str):
            held.live.setdefault("s:" + _shape(role, [it.text for _, it in parts]),
                                 [it.n for _, it in parts])
    return held


class _NeedVectors(Exception):
    """A message the lookup found stored is no longer (forgotten since): embed, decide again."""


class _NeedKeys(Exception):
    """The partition holds ledgers under secrets not read here yet: read them, decide again."""

    def __init__(self, ids: set[str]) -> None:
        super().__init__(f"{len(ids)} digest keys")
        self.ids = ids


class Conversations:
    """Sessions of messages in a memory: ingest (here), list, open and forget
    (``semmem.conversations.sessions``)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.keyed = host.keyed

    def digest(self, message: Message) -> str:
        """A message's digest: keyed by the store's secret, so it confirms no guessed text."""
        return digest(self.host.secret, message.role, message.content)

    async def ingest(self, partition: str, session: Address, messages: Sequence[Message], *,
                     op: Operation | None = None, scope: Filter | None = None,
                     vectors: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
        """Store ``messages`` in ``session`` (appended to what it holds), each as pieces, in
        one write.

        Returns:
            ``{"status": "stored", "sessionId", "items": [[n, …] per message], "count"}``:
            each message's piece numbers (a message already held answers its own; one with no
            text, or forgotten, ``[]``) and the partition's live count. A replay answers the
            recorded numbers still live (a piece forgotten since is left out).
        Raises:
            IdempotencyMismatch: ``op``'s id was used for another request.
            Conflict: the partition was deleted while the ingest ran (nothing stored).
            DeadlineExceeded, Unavailable, QuotaExceeded: nothing stored.
        """
        op = op and op.keyed(self.host.secret)
        # Its own scope's ledgers (and the one written before ledgers had scopes), under this
        # store's secret and those of the stores an import brought ledgers of.
        ledgers = SessionLedgers(self.host.secret, await self.host.digest_keys(()), session,
                                 scope.metadata if scope is not None else {})
        asked: set[str] = set()  # key ids the registry was read for
        held = await self.keyed.held(partition, session)
        replayed = await self._replayed(partition, session, held, op)
        if replayed is not None:
            return replayed
        cuts = await off_loop(sum(len(m.content) for m in messages), self.cuts, messages)
        if not any(c.pieces for c in cuts):  # nothing to store: no write, no partition
            return await self._counted(partition, session,
                                       {"items": [[] for _ in cuts], "count": held.view.count})
        alive = await self.host.liveness(partition)
        within = scope.matches if scope is not None and not scope.empty else _always
        stamp = _Stamp(alive, within, scope.stamp(None) if scope is not None else None,
                       self.host.secret)
        vectors = {} if vectors is None else vectors  # piece text → vector
        deadline = op.deadline_ms if op is not None else None
        for _ in range(ATTEMPTS):
            stored = known(await self.keyed.items(held), alive, within, self.host.secret)
            await self._embed(partition, [text for c in cuts if stored.find(c) is None
                               for text in c.pieces], vectors, deadline)
            decide = _decider(session, cuts, held, vectors, stamp, op, (ledgers, asked),
                              self.host.idempotency_ttl_ms)
            try:
                result = await self.keyed.commit(partition, held, decide, op,
                                                 records=ledgers.keys())
            except _NeedKeys as need:  # an import's ledgers, through another process
                asked |= need.ids
                ledgers = replace(ledgers, others=await self.host.digest_keys(need.ids))
                continue
            except (Moved, rules.MissingRows, _NeedVectors):
                held = await self.keyed.held(partition, session)
                continue
            return await self._counted(partition, session, result)
        raise Unavailable("the session kept changing under this ingest; retry it")

    async def _counted(self, partition: str, session: Address,
                       result: dict[str, Any]) -> dict[str, Any]:
        answer = {"status": "stored", "sessionId": session.key, **result}
        return await self.host.retention.counted(partition, answer)

    def cuts(self, messages: Sequence[Message]) -> list[Cut]:
        """Each message cut into pieces, with its digest."""
        return [Cut(m, self.digest(m), pieces,
                    shape_digest(self.host.secret, m.role, pieces))
                for m in messages for pieces in [tuple(cut(m.content))]]

    async def ingest_many(self, partition: str,
                          sessions: Sequence[tuple[Address, Sequence[Message]]], *,
                          scope: Filter | None = None) -> list[dict[str, Any]]:
        """``ingest`` of several sessions (a bulk import): the pieces none of them holds yet
        embedded together in batches first, then one write per session."""
        alive = await self.host.liveness(partition)
        within = scope.matches if scope is not None and not scope.empty else _always
        vectors: dict[str, np.ndarray] = {}
        wanted: list[str] = []
        for address, messages in sessions:
            held = await self.keyed.held(partition, address)
            stored = known(await self.keyed.items(held), alive, within, self.host.secret)
            cuts = await off_loop(sum(len(m.content) for m in messages), self.cuts, messages)
            wanted += [t for c in cuts if stored.find(c) is None for t in c.pieces]
        await self._embed(partition, wanted, vectors, None)
        return [await self.ingest(partition, address, messages, scope=scope, vectors=vectors)
                for address, messages in sessions]

    async def _replayed(self, partition: str, session: Address, held: Held,
                        op: Operation | None) -> dict[str, Any] | None:
        """The recorded result of ``op`` (before anything is cut or embedded), its numbers
        those of the session's pieces still live (the record names no session: a session
        forgotten since leaves its numbers out of every replay)."""
        if op is None:
            return None

        def plan(view: WriteView) -> Decision:
            return rules.replay(view, op) or {}

        found = await self.host.commit(partition, plan, op)
        if not found:
            return None
        alive = await self.host.liveness(partition)
        live = {it.n for it in await self.keyed.items(held) if alive(it)}
        items = [[n for n in numbers if n in live] for numbers in found.get("items", [])]
        return await self._counted(partition, session,
                                   {**found, "items": items, "count": held.view.count})

    async def _embed(self, partition: str, texts: list[str], vectors: dict[str, np.ndarray],
                     deadline_ms: int | None) -> None:
        """Vectors of ``texts`` not yet in ``vectors``, in batches sorted by their words and
        marks (about the model's tokens: little padding), one model call per batch; past
        ``deadline_ms`` it stops (nothing is stored).

        Raises:
            DeadlineExceeded: the deadline passed before every piece was embedded.
        """
        wanted = sorted({t for t in texts if t not in vectors},
                        key=lambda t: (len(_TOKENS.findall(t)), len(t), t))
        for start in range(0, len(wanted), EMBED_BATCH):
            if deadline_ms is not None and now_ms() >= deadline_ms:
                raise DeadlineExceeded("deadline passed before the session was embedded; "
                                       "nothing was stored")
            batch = wanted[start:start + EMBED_BATCH]
            found = await self.host.embed_passages(batch, caller=partition)
            vectors.update(zip(batch, found, strict=True))


def _always(item: Item) -> bool:
    return True


@dataclass(frozen=True)
class _Stamp:
    """Which held pieces count (unexpired, in the caller's scope), the metadata new ones
    carry, and the store's secret (which digests are its own)."""

    alive: rules.Alive
    within: rules.Alive
    metadata: dict[str, Any] | None
    secret: bytes


def _decider(session: Address, cuts: list[Cut], held: Held, vectors: dict[str, np.ndarray],
             stamp: _Stamp, op: Operation | None, read: tuple[SessionLedgers, set[str]],
             ttl_ms: int) -> Any:
    ledgers, asked = read

    def decide(view: WriteView, pieces: list[Item]) -> Decision:
        if (view.head.gone and not held.view.head.gone and held.view.hwm > 0) \
                or view.seq < held.view.seq or view.hwm < held.view.hwm:
            raise Conflict("the partition was deleted while this ingest ran; nothing was "
                           "stored", {"partition": "deleted"})
        unknown = ledgers.unknown(view) - asked
        if unknown:
            raise _NeedKeys(unknown)
        found = known(pieces, stamp.alive, stamp.within, stamp.secret,
                      forgotten(view, *ledgers.own()))
        for i in ledgers.gone_elsewhere(view, [(c.message.role, c.message.content)
                                               for c in cuts]):
            found.gone.add(cuts[i].keys[0])
        last = max((p[MESSAGE] for it in pieces if isinstance(p := it.attrs.get(PIECE), dict)
                    and isinstance(p.get(MESSAGE), int)), default=-1)
        n, now, rows = view.hwm, now_ms(), []
        items: list[list[int]] = []
        for c in cuts:
            if not c.pieces:  # a message with no text: nothing to store or to know it by
                items.append([])
                continue
            numbers = found.find(c)
            if numbers is not None:
                items.append(list(numbers))
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
            found.live[c.keys[0]] = numbers  # the same text twice in one call: one message
            items.append(numbers)
        # The record names no session (a forgotten session leaves no id in it): a replay
        # is told its session by its request, which the fingerprint covers.
        result = {"status": "stored", "items": items, "count": view.count + len(rows)}
        if not rows and op is None:
            return result
        return rules.mutation(op, result, ttl_ms, rows, n if rows else None)

    return decide
