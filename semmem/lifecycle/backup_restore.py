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
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

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

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"id": self.id, "into": self.into, "partitions": self.partitions,
                "items": self.items, "tombstones": self.tombstones,
                "withheld": {"partitionsDeletedSince": self.deleted_partitions,
                             "forgottenOrExpiredSince": self.forgotten,
                             "textUpdatedSince": self.updated},
                "recordsFromLedger": self.records}


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
            dump = _against(dump, await ledger.snapshot(name), live or policy(name), report)
            # the policy is the live store's now (the owner may have changed it since)
            has, max_age = entry["table"] in overrides, overrides.get(entry["table"])
        else:
            has, max_age = override_of(entry)
            # what expired since the backup under its policy stays gone (a tombstone)
            test = live or _under(max_age if has else default_retention_ms)
            dump = _withheld(live_only(dump, now_ms(), test), dump, report)
        await write_partition(into, dump, entry["tableCreated"] or None)
        await into.relist(name)  # its system records, derived from what it restored
        if has:
            await into.set_retention(name, max_age)
        report.partitions += 1
        report.items += len(dump.items)
        report.tombstones += len(dump.tombstones)


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
