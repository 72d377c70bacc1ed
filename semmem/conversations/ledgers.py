"""Ledgers that travel: an export carries its partition's ledgers of forgotten messages, and
an import keeps them, so what the source store forgot stays forgotten in the store it goes to.

A ledger's row key and the message HMACs it lists are made under the secret of the store that
forgot (``conversations.forgotten``); another store cannot remake them without that secret.
So an export of a partition holding ledgers carries them as they are, with the secrets that
made them (its *digest keys*, by key id), and an import keeps both: the rows in the partition
(unioned with any there), the secrets in the store's registry (``k:<key id>``, beside the
store's own secret: out of the partition tables, so a guessed text is not confirmed from them
alone), and in the partition a row naming the key ids it holds ledgers of (``KEYS_ROW``, a
ledger row itself, so backups and restores carry it as they carry ledgers). Ingestion reads
that row with its write: a key id it has no secret for yet (an import through another replica)
is read from the registry, and the session's ledgers under that secret are looked up too
(``conversations.ingest``). Forgetting in the importing store goes to its own ledgers.

Export lines (JSONL, after the items): ``{"digestKeys": {"<key id>": "<secret hex>", …}}``,
then ``{"ledger": "<row key>", "forgotten": ["<hmac>", …]}`` per ledger.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from semmem.conversations.forgotten import digest, forgotten, key_id, ledger_key
from semmem.errors import InvalidInput
from semmem.items.address import Address
from semmem.store.rows import LEDGER, Mutation, op_key
from semmem.store.views import OpRecord, WriteView

KEYS_ROW = op_key("\x00forgotten/keys")  # the key ids of the secrets a partition's ledgers use
REGISTRY_PREFIX = "k:"  # a registry entry of another store's secret, by its key id
DIGEST_KEYS, LEDGER_FIELD, FORGOTTEN = "digestKeys", "ledger", "forgotten"
_KEY = re.compile(r"o:[0-9a-f]{64}")  # an op row key (``op_key``): it goes into a filter
_MAC = re.compile(r"[0-9a-f]{32}")
_ID = re.compile(r"[0-9a-f]{8}")
_SECRET = re.compile(r"(?:[0-9a-f]{2}){16,64}")


@dataclass(frozen=True)
class LedgerLine:
    """One line of an export's ledgers (``public``: its JSON record)."""

    record: dict[str, Any]

    def public(self) -> dict[str, Any]:
        """The line's record."""
        return self.record


def export_lines(ops: Iterable[OpRecord], secret: bytes,
                 others: Mapping[str, bytes]) -> list[LedgerLine]:
    """The ledger lines of a partition whose record rows are ``ops``: none without a ledger;
    else its digest keys (this store's ``secret`` and the ``others`` its keys row names),
    then each ledger."""
    rows = sorted((r for r in ops if r.fingerprint == LEDGER), key=lambda r: r.key)
    ledgers = [(r.key, found) for r in rows if r.key != KEYS_ROW
               and isinstance(found := json.loads(r.result), list) and found]
    if not ledgers:
        return []
    named = {key_id(secret): secret}
    for row in rows:
        if row.key == KEYS_ROW:
            named.update((i, others[i]) for i in _ids(row.result) if i in others)
    return [LedgerLine({DIGEST_KEYS: {i: s.hex() for i, s in sorted(named.items())}}),
            *(LedgerLine({LEDGER_FIELD: key, FORGOTTEN: sorted(found)})
              for key, found in ledgers)]


def is_ledger_line(record: Mapping[str, Any]) -> bool:
    """Whether an import's record is a ledger line (not an item)."""
    return DIGEST_KEYS in record or LEDGER_FIELD in record


def checked(record: Any, where: str) -> dict[str, Any]:
    """An import's ledger line, checked (its keys go into the store's filters).

    Raises:
        InvalidInput: not one of the two shapes; names ``where``.
    """
    if isinstance(record, dict) and set(record) == {DIGEST_KEYS} \
            and isinstance(keys := record[DIGEST_KEYS], dict) and keys \
            and all(isinstance(s, str) and _SECRET.fullmatch(s)
                    and key_id(bytes.fromhex(s)) == i for i, s in keys.items()):
        return record
    if isinstance(record, dict) and set(record) == {LEDGER_FIELD, FORGOTTEN} \
            and isinstance(record[LEDGER_FIELD], str) and _KEY.fullmatch(record[LEDGER_FIELD]) \
            and record[LEDGER_FIELD] != KEYS_ROW and isinstance(record[FORGOTTEN], list) \
            and all(isinstance(m, str) and _MAC.fullmatch(m) for m in record[FORGOTTEN]):
        return record
    raise InvalidInput(f"{where}: a ledger line is {{\"digestKeys\": {{id: secret}}}} or "
                       f"{{\"ledger\": key, \"forgotten\": [hmac, …]}} as an export wrote it")


def imported(lines: Sequence[Mapping[str, Any]], secret: bytes
             ) -> tuple[dict[str, bytes], dict[str, set[str]]]:
    """The other stores' secrets (by key id) and the ledgers (by row key) an import's checked
    ``lines`` carry; this store's own secret is not another's.

    Raises:
        InvalidInput: ledgers with no digest keys (they could never be read).
    """
    keys: dict[str, bytes] = {}
    ledgers: dict[str, set[str]] = {}
    for line in lines:
        if DIGEST_KEYS in line:
            keys.update((i, bytes.fromhex(s)) for i, s in line[DIGEST_KEYS].items())
        else:
            ledgers.setdefault(line[LEDGER_FIELD], set()).update(line[FORGOTTEN])
    if ledgers and not keys:
        raise InvalidInput("the import's ledgers come without their digest keys "
                           "(the export's \"digestKeys\" line)")
    keys.pop(key_id(secret), None)
    return keys, ledgers


def held_ids(view: WriteView) -> set[str]:
    """The key ids the partition holds ledgers of, besides its store's own."""
    row = view.ops.get(KEYS_ROW)
    return set(_ids(row.result)) if row is not None and row.fingerprint == LEDGER else set()


def kept_lines(view: WriteView, ids: Collection[str],
               ledgers: Mapping[str, set[str]]) -> Mutation:
    """The write keeping an import's ``ledgers`` (unioned with those there) and naming its
    digest keys' ``ids`` in the partition's keys row."""
    records = [OpRecord(key, LEDGER, json.dumps(sorted(forgotten(view, key) | macs)), None)
               for key, macs in sorted(ledgers.items())]
    if ids:
        names = sorted(held_ids(view) | set(ids))
        records.append(OpRecord(KEYS_ROW, LEDGER, json.dumps(names), None))
    return Mutation(records=records, result={"ledgers": len(ledgers)})


@dataclass(frozen=True)
class SessionLedgers:
    """The ledgers an ingest into a session reads: its scope's (and the unscoped one written
    before ledgers had scopes) under this store's secret and under each other store's secret
    known here (``others``, by key id), and the partition's keys row."""

    secret: bytes
    others: Mapping[str, bytes]
    session: Address
    scope: Mapping[str, Any]

    def own(self) -> tuple[str, str]:
        """This store's ledger keys of the session."""
        return self.under(self.secret)

    def under(self, secret: bytes) -> tuple[str, str]:
        """The session's ledger keys under ``secret``: its scope's, and the unscoped one."""
        return (ledger_key(secret, self.session, self.scope),
                ledger_key(secret, self.session))

    def keys(self) -> list[str]:
        """Every row the ingest's write looks up for them."""
        return [*self.own(), KEYS_ROW,
                *(k for s in self.others.values() for k in self.under(s))]

    def unknown(self, view: WriteView) -> set[str]:
        """The key ids the partition holds ledgers of that have no secret here yet."""
        return held_ids(view) - self.others.keys()

    def gone_elsewhere(self, view: WriteView, messages: Sequence[tuple[str, str]]) -> set[int]:
        """Which of ``messages`` (role, content) a ledger an import brought names."""
        gone: set[int] = set()
        for i in held_ids(view) & self.others.keys():
            secret = self.others[i]
            names = forgotten(view, *self.under(secret))
            if names:
                gone.update(j for j, (role, content) in enumerate(messages)
                            if digest(secret, role, content)[-32:] in names)
        return gone


def registry_entries(keys: Mapping[str, bytes]) -> dict[str, dict[str, str]]:
    """The registry entries of other stores' secrets."""
    return {REGISTRY_PREFIX + i: {"secret": s.hex()} for i, s in keys.items()}


def from_registry(rows: Mapping[str, Any]) -> dict[str, bytes]:
    """The other stores' secrets a registry holds, by key id."""
    return {k[len(REGISTRY_PREFIX):]: bytes.fromhex(v["secret"]) for k, v in rows.items()
            if k.startswith(REGISTRY_PREFIX) and isinstance(v, dict)
            and isinstance(v.get("secret"), str)}


def _ids(result: str) -> list[str]:
    found = json.loads(result)
    return [i for i in found if isinstance(i, str) and _ID.fullmatch(i)] \
        if isinstance(found, list) else []
