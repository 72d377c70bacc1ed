"""Restoring a backup into a new, empty store, optionally against the live store as a ledger.

The stored vectors are written as they are: a restore makes no embedding call (the new store
records the backup's model; with another model configured, ``semmem reindex`` follows).

With a ledger (the live store) the restore honours what happened after the backup:

- a partition deleted since (absent now, or made again since) is not restored;
- a fact no longer live there (forgotten, expired) or whose text changed comes back as a
  numbered tombstone: its text and vector are written nowhere;
- a fact whose text is unchanged takes the record fields the live store has now;
- every partition's high-water mark is the higher of the backup's and the live store's, so
  no number ever issued is issued again.

Each partition gets its retention override: the live store's now with a ledger, else the one
its backup entry carries; without a ledger, a fact expired since under that policy (or the
restoring deployment's default) is written as a tombstone, as a backup writes one.

Forgotten stays forgotten in the restored store: it keeps the backup's secret (the manifest
carries it; a backup of an earlier release carries none: then the live store's, with a ledger,
else a new one, and the report says so), so its pieces' digests and its sessions' ledgers of
forgotten messages (in the partitions' objects) keep naming what they named. Each piece
withheld as forgotten or expired joins its session's ledger, as a forget would have made it;
with a ledger of the same secret, the live store's ledgers are taken too (a message stored and
forgotten since the backup).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem.conversations.forgotten import ledgered
from semmem.conversations.ledgers import from_registry, registry_entries
from semmem.errors import InvalidInput
from semmem.items import Item, now_ms
from semmem.lifecycle.backup import (
    APPLICATION,
    MODEL,
    live_only,
    load_manifest,
    override_of,
    read_object,
    slot,
)
from semmem.lifecycle.backup_format import Manifest, decode
from semmem.lifecycle.liveness import Live, policies
from semmem.lifecycle.retention import is_live
from semmem.store.apart import application_store
from semmem.store.copies.dump import Dump, created_at, write_partition
from semmem.store.copies.objects import Objects
from semmem.store.formats import FORMAT, KEY, format_of
from semmem.store.rows import LEDGER
from semmem.store.views import Head, PartitionSnapshot, Tombstone

if TYPE_CHECKING:
    from semmem.store.tables import Store

@dataclass
class RestoreReport:
    """What a restore wrote and what it withheld (by partition, the numbers)."""

    id: str
    into: str
    partitions: int = 0
    items: int = 0
    tombstones: int = 0
    deleted_partitions: list[str] = field(default_factory=list)
    forgotten: dict[str, list[int]] = field(default_factory=dict)
    updated: dict[str, list[int]] = field(default_factory=dict)
    records: dict[str, list[int]] = field(default_factory=dict)  # fields taken from the ledger
    secret: str = "backup"  # whose secret the restored store keeps: "backup", "ledger", "new"
    ledgers: int = 0  # the session ledgers written

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"id": self.id, "into": self.into, "partitions": self.partitions,
                "items": self.items, "tombstones": self.tombstones,
                "withheld": {"partitionsDeletedSince": self.deleted_partitions,
                             "forgottenOrExpiredSince": self.forgotten,
                             "textUpdatedSince": self.updated},
                "recordsFromLedger": self.records,
                "secret": {"backup": "the backup's (as the source store's)",
                           "ledger": "the live store's (the backup carries none)",
                           "new": "a new one: the backup (of an earlier release) carries none, "
                                  "so a message forgotten before it may be stored again by a "
                                  "re-send"}[self.secret],
                "sessionLedgers": self.ledgers}


async def restore_backup(target: Objects, backup_id: str, into: Store,
                         ledger: Store | None = None, *, live: Live | None = None,
                         default_retention_ms: int | None = None) -> RestoreReport:
    """Write backup ``backup_id`` into ``into`` (a new store, opened by the caller), every
    object checked against its SHA-256 first; with ``ledger``, as described above (a fact is
    live there by ``live``, else by the ledger's retention, whose default is
    ``default_retention_ms``)."""
    manifest = await asyncio.to_thread(load_manifest, target, backup_id)
    check_format(manifest)
    report = RestoreReport(manifest.id, into.uri)
    if await into.partitions():
        raise InvalidInput(f"{into.uri} is not empty: a backup is restored into a new store")
    if any(e["model"] != into.model_id for e in manifest.partitions):
        raise InvalidInput(f"backup {manifest.id} holds vectors of a model other than "
                           f"{into.model_id!r}: restore into a store of its model")
    dumps = []
    for entry in manifest.partitions:  # every checksum before the first write
        dumps.append((entry, decode(await asyncio.to_thread(read_object, target, entry))))
    await _keep_secret(into, manifest, ledger, report)
    await _restore(into, ledger, [d for d in dumps if slot(d[0])[0] == MODEL], live,
                   default_retention_ms, report)
    theirs = [d for d in dumps if slot(d[0])[0] == APPLICATION]
    if theirs:  # into the application's store beside ``into`` (``store/apart.py``)
        stores = [application_store(s) for s in (into, ledger) if s is not None]
        for opened in stores:
            await opened.open(check_model=False)
        try:
            await _restore(stores[0], stores[1] if len(stores) > 1 else None, theirs, None,
                           None, report)
        finally:
            for opened in stores:
                await opened.close()
    meta = await into.meta() or {}
    if manifest.store_format is None and KEY in meta:
        # The source recorded no format: neither does the copy, whose first open tells it by
        # what its release wrote (``stored/marks.py``), as it would the source's.
        await into.set_meta({k: v for k, v in meta.items() if k != KEY})
    elif manifest.store_format is not None and manifest.store_format < format_of(meta):
        await into.set_meta({**meta, KEY: manifest.store_format})  # its first open upgrades it
    return report


async def _restore(into: Store, ledger: Store | None, dumps: list[tuple[dict[str, Any], Dump]],
                   live: Live | None, default_retention_ms: int | None,
                   report: RestoreReport) -> None:
    """Write ``dumps`` (their manifest entries) into ``into``, against ``ledger`` if given."""
    existing = set(await ledger.partitions()) if ledger is not None else set()
    created = await created_at(ledger) if ledger is not None else {}
    policy = await policies(ledger, default_retention_ms) if ledger is not None else None
    overrides = await ledger.retention() if ledger is not None else {}
    for entry, dump in dumps:
        name = dump.head.partition
        if ledger is not None:
            if name not in existing or created.get(name) != entry["tableCreated"]:
                report.deleted_partitions.append(name)
                continue
            assert policy is not None
            # the policy is the live store's now (the owner may have changed it since)
            has, max_age = entry["table"] in overrides, overrides.get(entry["table"])
            whole = dump
            dump = _against(dump, snapshot := await ledger.snapshot(name),
                            live or policy(name), report)
            theirs = snapshot.ops.values() if ledger.secret == into.secret else ()
            dump = _ledgered(dump, whole, report, into.secret,
                             [(r.key, r.result) for r in theirs if r.fingerprint == LEDGER])
        else:
            has, max_age = override_of(entry)
            # what expired since the backup under its policy stays gone (a tombstone)
            test = live or _under(max_age if has else default_retention_ms)
            dump = _ledgered(_withheld(live_only(dump, now_ms(), test), dump, report), dump,
                             report, into.secret, [])
        report.ledgers += len(dump.ledgers)
        await write_partition(into, dump, entry["tableCreated"] or None)
        await into.relist(name)  # its system records, derived from what it restored
        if has:
            await into.set_retention(name, max_age)
        report.partitions += 1
        report.items += len(dump.items)
        report.tombstones += len(dump.tombstones)


async def _keep_secret(into: Store, manifest: Manifest, ledger: Store | None,
                       report: RestoreReport) -> None:
    """Give ``into`` (new, empty) the backup's secret, else the live store's, and the other
    stores' secrets the backup's (and the live store's) imported ledgers are keyed by."""
    keys = {i: bytes.fromhex(k) for i, k in manifest.digest_keys.items()}
    if ledger is not None:
        keys.update(from_registry(await ledger.conn.registry.rows()))
    for key, value in registry_entries(keys).items():
        await into.conn.registry.put(key, value)
    if manifest.secret is not None:
        secret = bytes.fromhex(manifest.secret)
    elif ledger is not None:
        secret, report.secret = ledger.secret, "ledger"
    else:
        report.secret = "new"
        return
    await into.conn.registry.set_secret(secret)
    into.secret = secret


def _ledgered(dump: Dump, whole: Dump, report: RestoreReport, secret: bytes,
              theirs: list[tuple[str, str]]) -> Dump:
    """``dump`` whose ledgers name the messages of the pieces of ``whole`` it withholds as
    forgotten or expired (``report``) besides what they named, and those ``theirs`` (record
    key, result) name."""
    ledgers = {k: set(v) for k, v in dump.ledgers.items()}
    for key, result in theirs:
        found = json.loads(result)
        if isinstance(found, list):
            ledgers.setdefault(key, set()).update(m for m in found if isinstance(m, str))
    gone = set(report.forgotten.get(whole.head.partition, ()))
    withheld = [it for it in whole.items if it.n in gone]
    for key, macs in ledgered(withheld, secret).items():
        ledgers.setdefault(key, set()).update(macs)
    return replace(dump, ledgers={k: sorted(v) for k, v in ledgers.items()})


def check_format(manifest: Manifest) -> None:
    """Refuse a backup of a store of a later format, as opening that store is refused
    (``lifecycle/upgrading.py``): this release would label it with its own format and serve
    what it cannot read.

    Raises:
        InvalidInput: its store's format is newer than this release's.
    """
    if manifest.store_format is not None and manifest.store_format > FORMAT:
        raise InvalidInput(
            f"backup {manifest.id} is of a store of format {manifest.store_format}, written by "
            f"a later release; this one reads format {FORMAT} and earlier: restore it with "
            f"that release")


def _under(max_age_ms: int | None) -> Live:
    """Retention's test of a live fact under ``max_age_ms``."""
    return lambda item, now: is_live(item, max_age_ms, now)


def _withheld(kept: Dump, whole: Dump, report: RestoreReport) -> Dump:
    """``kept``, noting in ``report`` the facts of ``whole`` it holds as tombstones."""
    gone = [it.n for it in whole.items if it.n in kept.tombstones]
    if gone:
        report.forgotten.setdefault(whole.head.partition, []).extend(gone)
    return kept


def _against(dump: Dump, now: PartitionSnapshot, live: Live, report: RestoreReport) -> Dump:
    """``dump`` as the live partition ``now`` allows it."""
    at = now_ms()
    name = dump.head.partition
    seq = max(dump.head.seq, now.seq) + 1  # the restore's own write: above every cursor
    items: list[Item] = []
    keep: list[int] = []
    tombstones = dict(dump.tombstones)
    for i, it in enumerate(dump.items):
        current = now.get(it.n)
        if current is None or not live(current, at) or current.text != it.text:
            bucket = report.forgotten if current is None or not live(current, at) \
                else report.updated
            bucket.setdefault(name, []).append(it.n)
            tombstones[it.n] = Tombstone(it.n, seq, at, it.created)
            continue
        if current.attrs != it.attrs:
            report.records.setdefault(name, []).append(it.n)
            it = replace(it, attrs=dict(current.attrs), revision=current.revision,
                         updated=current.updated)
        items.append(it)
        keep.append(i)
    head = Head(name, dump.head.version, max(dump.head.hwm, now.hwm), seq, dump.head.model)
    vectors = dump.vectors[np.asarray(keep, dtype=np.int64)] if keep \
        else dump.vectors[:0]
    return Dump(head, items, vectors, tombstones)
