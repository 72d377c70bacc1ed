"""Forgotten stays forgotten: a session remembers, as keyed hashes, the messages whose pieces
were forgotten or expired, so sending the session again (the whole history, as hosts do each
turn) never brings one back.

The memory's write path (``semmem.writes``) passes every decided write through ``kept``: a
write that replaces a live piece of a session by a tombstone (a forget by number, a session
forgotten whole, the retention sweep, a delete by filter: every door's forget) commits with
it the session's *ledger* of the piece's scope: an idempotency-like record row (no expiry)
whose key is an HMAC of the session and of the scope the piece was stored under (its
metadata: what a scoped token stamps, nothing for an unscoped one) under the store's secret,
and whose value lists the forgotten messages' digests (HMACs of role and content). No text, no
session id, no scope in clear; it goes with its partition. Ingestion
(``conversations.ingest``) looks up the ledger of its own scope with its write and stores no
message it names: what one scope forgot neither blocks another's ingest nor is revealed to it
(a ledger written before ledgers had scopes, ``ledger_key`` without one, is still read by
every scope and no longer written). The same rule holds for every piece of a message:
forgetting one piece of two makes the message forgotten, as forgetting its only piece does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from semmem.conversations.pieces import DIGEST, MESSAGE, PART, PIECE, ROLE, SESSION
from semmem.items import Item
from semmem.items.address import KEYED, Address, address_of
from semmem.items.metadata import canonical
from semmem.rules import MissingRecords
from semmem.store.rows import LEDGER, Mutation, op_key
from semmem.store.views import OpRecord, WriteView

KEY_ID_CHARS = 8  # a digest leads with its store's key id: whose secret made it


def key_id(secret: bytes) -> str:
    """Which secret made a digest (a hash of it, not it)."""
    return hmac.new(secret, b"semmem digest key", hashlib.sha256).hexdigest()[:KEY_ID_CHARS]


def digest(secret: bytes, role: str, content: str) -> str:
    """A message's digest: the store's key id, then an HMAC of its role and exact content."""
    mac = hmac.new(secret, f"{role}\x00{content}".encode(), hashlib.sha256).hexdigest()[:32]
    return key_id(secret) + mac


def shape_digest(secret: bytes, role: str, pieces: Sequence[str]) -> str:
    """A message's digest by its role and its pieces' exact texts (the store's key id, then an
    HMAC): what an import gives a message whose digest another store's secret made, when it
    holds every piece of it (its exact content is not: pieces are trimmed), so a re-send finds
    it (``Cut.keys``) and a forget of it reaches the ledger."""
    text = "\x00shape\x00" + role + "\x00" + "\x01".join(pieces)
    mac = hmac.new(secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
    return key_id(secret) + mac.hexdigest()[:32]


def rekeyed(records: Sequence[dict[str, Any]], secret: bytes) -> list[dict[str, Any]]:
    """``records`` (an import's) whose conversation pieces carrying another store's digest
    carry this store's instead (``shape_digest``), for each message whose pieces are all there
    (parts 0…k-1); a message missing a piece keeps its digest (it names nothing here)."""
    messages: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
    for i, rec in enumerate(records):
        piece, where = rec.get(PIECE), rec.get(KEYED)
        if not isinstance(piece, dict) or not isinstance(where, dict) \
                or where.get("space") != SESSION or not isinstance(piece.get(DIGEST), str) \
                or mac_of(piece[DIGEST], secret) is not None \
                or not isinstance(piece.get(MESSAGE), int) \
                or not isinstance(piece.get(PART), int):
            continue
        messages.setdefault((str(where.get("key")), str(piece.get(DIGEST)), piece[MESSAGE]),
                            []).append((piece[PART], i))
    out = list(records)
    for parts in messages.values():
        parts.sort()
        if [p for p, _ in parts] != list(range(len(parts))):
            continue
        first = out[parts[0][1]][PIECE]
        texts = [str(out[i].get("text")) for _, i in parts]
        made = shape_digest(secret, str(first.get(ROLE)), texts)
        for _, i in parts:
            out[i] = {**out[i], PIECE: {**out[i][PIECE], DIGEST: made}}
    return out


def mac_of(stored: str, secret: bytes) -> str | None:
    """The message HMAC a piece's stored digest names under this store's secret: a digest
    made here, or one written before digests carried a key id (32 hex: this store's as far as
    anyone can tell); ``None`` for another store's (an import's)."""
    if len(stored) == KEY_ID_CHARS + 32 and stored[:KEY_ID_CHARS] == key_id(secret):
        return stored[KEY_ID_CHARS:]
    return stored if len(stored) == 32 else None


def ledger_key(secret: bytes, session: Address,
               scope: Mapping[str, Any] | None = None) -> str:
    """The row key of a session's ledger for the pieces stored under ``scope`` (a piece's
    metadata, a scoped token's stamp; ``{}``: unscoped); keyed, so it names no session and no
    scope to a reader of the files. ``None``: the one ledger of a session written before
    ledgers had scopes (read, never written)."""
    text = f"\x00forgotten\x00{session.space}\x00{session.key}"
    if scope is not None:
        text += "\x00scope\x00" + canonical(dict(scope))
    mac = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
    return op_key("\x00forgotten/" + mac)


def forgotten(view: WriteView, *keys: str) -> set[str]:
    """The message HMACs the ledgers at ``keys`` (looked up with the write) name."""
    names: set[str] = set()
    for key in keys:
        record = view.ops.get(key)
        if record is None or record.fingerprint != LEDGER:
            continue
        found = json.loads(record.result)
        if isinstance(found, list):
            names.update(m for m in found if isinstance(m, str))
    return names


def ledgered(items: Iterable[Item], secret: bytes) -> dict[str, set[str]]:
    """What forgetting ``items`` adds to the ledgers of the store whose secret is ``secret``:
    by ledger key, the HMACs of the messages the pieces among them belong to (a piece whose
    digest another secret made names nothing here and adds nothing)."""
    gone: dict[str, set[str]] = {}
    for old in items:
        piece = old.attrs.get(PIECE)
        address = address_of(old)
        if address is None or address.space != SESSION or not isinstance(piece, dict) \
                or not isinstance(piece.get(DIGEST), str):
            continue
        mac = mac_of(piece[DIGEST], secret)
        if mac is not None:
            gone.setdefault(ledger_key(secret, address, old.metadata), set()).add(mac)
    return gone


def kept(view: WriteView, decision: Mutation, secret: bytes,
         looked: Collection[str]) -> Mutation:
    """``decision`` with the ledger of each session whose pieces it forgets grown by those
    pieces' messages.

    Raises:
        MissingRecords: a ledger the write did not look up (decide again with it).
    """
    gone = ledgered([old for row in decision.items if row.forgotten
                     and (old := view.get(row.n)) is not None], secret)
    if not gone:
        return decision
    missing = sorted(k for k in gone if k not in looked)
    if missing:
        raise MissingRecords(missing)
    records = [OpRecord(k, LEDGER, json.dumps(sorted(forgotten(view, k) | macs)), None)
               for k, macs in gone.items()]
    return replace(decision, records=[*decision.records, *records])
