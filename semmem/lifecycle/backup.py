"""Backups of a store: taken online, one partition at a time at one version each; listed,
verified and expired (restores: ``backup_restore.py``; the format: ``backup_format.py``).

A partition whose table (by its creation) and version — or, at a new version, write sequence
and model — match its entry in the target's newest backup (with the object still there) is
referenced, not read again: its content cannot have changed without a write, and every write
moves the sequence. Each entry carries its partition's retention override (a restore applies
it), as it was when the backup ran.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem.conversations.ledgers import from_registry
from semmem.errors import InvalidInput, NotFound
from semmem.items import now_ms
from semmem.lifecycle.backup_format import (
    MANIFESTS,
    OBJECTS,
    Manifest,
    decode,
    encode,
    manifest_name,
    new_id,
    object_name,
    sha256,
    valid_id,
)
from semmem.lifecycle.liveness import Live, policies
from semmem.store.copies.dump import Dump, created_at, latest_version, read_head, read_partition
from semmem.store.copies.objects import Objects
from semmem.store.formats import KEY, format_of
from semmem.store.rows import table_name
from semmem.store.views import Tombstone

if TYPE_CHECKING:
    from semmem.store.tables import Store

# Partitions read at once: reads wait on storage, encoding on the CPU.
PARALLEL = 4
# Objects no manifest names are removed by ``expire`` only once this old: a backup still
# running may have written them and not yet its manifest.
UNREFERENCED_AGE_S = 3600.0
RETENTION = "retention"  # a manifest entry's retention override, when the partition has one
STORE = "store"  # a manifest entry's store: absent for the model's, else ``APPLICATION``
MODEL, APPLICATION = "model", "application"


async def create_backup(store: Store, target: Objects, *, live: Live | None = None,
                        default_retention_ms: int | None = None,
                        application: Store | None = None) -> Manifest:
    """Back ``store`` up into ``target``; the manifest, written last, is returned.

    Every fact acknowledged before this call is in the backup; one acknowledged meanwhile is
    in it whole or not at all (each partition is read at one version). A fact no longer
    live (expired, not yet swept: by ``live``, else the partition's retention, whose default is
    ``default_retention_ms``) is written as a tombstone. The application's store beside it
    (``application``, else opened here: ``store/apart.py``) is backed up in the same manifest,
    its entries marked ``"store": "application"`` (its items expire by their TTL alone).
    """
    from semmem.store.apart import application_store

    started = now_ms()
    previous = await asyncio.to_thread(_newest, target)
    before = {slot(p): p for p in previous.partitions} if previous else {}
    gate = asyncio.Semaphore(PARALLEL)
    entries = await _entries(store, target, before, gate, live, default_retention_ms, MODEL)
    beside = application or application_store(store)
    if application is None:
        await beside.open(check_model=False)
    try:
        entries += await _entries(beside, target, before, gate, None, None, APPLICATION)
    finally:
        if application is None:
            await beside.close()
    meta = await store.meta()
    recorded = None if meta is not None and KEY not in meta else format_of(meta)
    manifest = Manifest(new_id(started), started, now_ms(), store.uri, store.model_id, store.dim,
                        entries, recorded, store.secret.hex() or None,
                        {i: k.hex() for i, k in
                         from_registry(await store.conn.registry.rows()).items()})
    await asyncio.to_thread(target.put, manifest_name(manifest.id), manifest.to_bytes())
    return manifest


def slot(entry: dict[str, Any]) -> tuple[str, str]:
    """Which store (``MODEL`` or ``APPLICATION``) and partition a manifest entry is of."""
    return str(entry.get(STORE, MODEL)), str(entry["partition"])


async def _entries(store: Store, target: Objects, before: dict[tuple[str, str], Any],
                   gate: asyncio.Semaphore, live: Live | None,
                   default_retention_ms: int | None, which: str) -> list[dict[str, Any]]:
    """The manifest entries of every partition of ``store`` (``which`` store it is)."""
    names = await store.partitions()
    created = await created_at(store)
    policy = await policies(store, default_retention_ms)
    overrides = await store.retention()
    mark = {} if which == MODEL else {STORE: which}

    async def one(name: str) -> dict[str, Any] | None:
        async with gate:
            entry = await _back_up(store, target, name, created.get(name, 0),
                                   before.get((which, name)), live or policy(name))
            return None if entry is None else {**with_override(entry, overrides), **mark}

    return [e for e in await asyncio.gather(*(one(n) for n in names)) if e is not None]


async def _back_up(store: Store, target: Objects, name: str, created: int,
                   before: dict[str, Any] | None, live: Live) -> dict[str, Any] | None:
    if before is not None and before["tableCreated"] == created \
            and await _unchanged(store, name, before) \
            and await asyncio.to_thread(target.exists, object_name(before["object"])):
        return {**before, "copied": False}
    dump = await read_partition(store, name)
    if dump is None:  # deleted since the listing
        return None
    dump = live_only(dump, now_ms(), live)

    def write() -> tuple[str, int]:
        data = encode(dump)
        digest = sha256(data)
        if not target.exists(object_name(digest)):
            target.put(object_name(digest), data)
        return digest, len(data)

    digest, size = await asyncio.to_thread(write)
    head = dump.head
    return {"partition": name, "table": table_name(name), "tableCreated": created,
            "version": head.version, "seq": head.seq, "hwm": head.hwm, "model": head.model,
            "dim": int(dump.vectors.shape[1]), "items": len(dump.items),
            "tombstones": len(dump.tombstones), "object": digest, "bytes": size, "copied": True}


def with_override(entry: dict[str, Any], overrides: dict[str, int | None]) -> dict[str, Any]:
    """A manifest entry carrying its partition's retention override as it is now (``retention``:
    ``{"maxAgeMs": …}``, ``None`` for keep forever; no key: the deployment's default)."""
    out = {k: v for k, v in entry.items() if k != RETENTION}
    if entry["table"] in overrides:
        out[RETENTION] = {"maxAgeMs": overrides[entry["table"]]}
    return out


def override_of(entry: dict[str, Any]) -> tuple[bool, int | None]:
    """Whether a manifest entry carries a retention override, and its max age (ms)."""
    held = entry.get(RETENTION)
    return (True, held["maxAgeMs"]) if isinstance(held, dict) else (False, None)


async def _unchanged(store: Store, name: str, before: dict[str, Any]) -> bool:
    """Whether the partition holds what ``before`` recorded: the same version (a listing),
    else the same write sequence and model (a compaction or index build made a new version of
    the same content)."""
    if await latest_version(store, name) == before["version"]:
        return True
    head = await read_head(store, name)
    return head is not None and head.seq == before["seq"] and head.model == before["model"]


def live_only(dump: Dump, now: int, live: Live) -> Dump:
    """``dump`` with the facts no longer live (expired, not yet swept) as tombstones."""
    gone = [i for i, it in enumerate(dump.items) if not live(it, now)]
    if not gone:
        return dump
    dropped = set(gone)
    keep = [i for i in range(len(dump.items)) if i not in dropped]
    tombstones = dict(dump.tombstones)
    for i in gone:
        it = dump.items[i]
        tombstones[it.n] = Tombstone(it.n, it.seq, it.updated, it.created)
    return Dump(dump.head, [dump.items[i] for i in keep],
                dump.vectors[np.asarray(keep, dtype=np.int64)], tombstones)


def list_backups(target: Objects) -> list[Manifest]:
    """Every complete backup in ``target``, oldest first (a manifest that does not read back
    whole is left out: ``verify`` names it)."""
    found = []
    for name in sorted(target.ages(MANIFESTS)):
        if not name.endswith(".json"):
            continue
        try:
            found.append(Manifest.from_bytes(target.get(f"{MANIFESTS}/{name}")))
        except (InvalidInput, FileNotFoundError):
            continue
    return sorted(found, key=lambda m: (m.created, m.finished, m.id))


def _newest(target: Objects) -> Manifest | None:
    found = list_backups(target)
    return found[-1] if found else None


def load_manifest(target: Objects, backup_id: str) -> Manifest:
    """The manifest of backup ``backup_id``.

    Raises:
        NotFound: no complete backup has that id.
        InvalidInput: its manifest is damaged.
    """
    if not valid_id(backup_id):
        raise NotFound(f"no backup {backup_id!r} in {target.uri}")
    try:
        data = target.get(manifest_name(backup_id))
    except FileNotFoundError:
        raise NotFound(f"no backup {backup_id!r} in {target.uri}") from None
    return Manifest.from_bytes(data)


def read_object(target: Objects, entry: dict[str, Any]) -> bytes:
    """A partition's object, checked against its SHA-256.

    Raises:
        InvalidInput: missing, or its bytes do not match the checksum.
    """
    if not re.fullmatch(r"[0-9a-f]{64}", str(entry.get("object"))):
        raise InvalidInput(f"manifest entry of partition {entry['partition']!r} names no object")
    try:
        data = target.get(object_name(entry["object"]))
    except FileNotFoundError:
        raise InvalidInput(f"object of partition {entry['partition']!r} is missing") from None
    if sha256(data) != entry["object"]:
        raise InvalidInput(f"object of partition {entry['partition']!r} is damaged "
                           "(its SHA-256 does not match)")
    return data


@dataclass
class VerifyReport:
    """What ``verify`` found: objects checked and each problem."""

    id: str
    objects: int
    problems: list[str]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"id": self.id, "ok": not self.problems, "objects": self.objects,
                "problems": self.problems}


def verify_backup(target: Objects, backup_id: str) -> VerifyReport:
    """Read every object of a backup back: its checksum, its format, its counts."""
    manifest = load_manifest(target, backup_id)
    problems: list[str] = []
    for entry in manifest.partitions:
        try:
            dump = decode(read_object(target, entry))
        except InvalidInput as exc:
            problems.append(exc.message)
            continue
        if (len(dump.items), len(dump.tombstones), dump.head.hwm) != (
                entry["items"], entry["tombstones"], entry["hwm"]) \
                or dump.head.partition != entry["partition"]:
            problems.append(f"object of partition {entry['partition']!r} does not match "
                            "its manifest entry")
    return VerifyReport(manifest.id, len(manifest.partitions), problems)


def expire_backups(target: Objects, keep_s: float) -> dict[str, Any]:
    """Delete the backups that started more than ``keep_s`` ago, then the objects no
    remaining backup names (those of a backup still being written are spared for an hour),
    and the temporary files a killed backup left (as old: they hold fact texts too)."""
    cutoff = now_ms() - int(keep_s * 1000)
    backups = list_backups(target)
    expired = [m for m in backups if m.created < cutoff]
    for m in expired:
        target.delete(manifest_name(m.id))
    kept = list_backups(target)
    named = {p["object"] for m in kept for p in m.partitions}
    removed = 0
    for name, age in target.ages(OBJECTS).items():
        if name in named:
            continue
        if age >= UNREFERENCED_AGE_S or name in {p["object"] for m in expired
                                                 for p in m.partitions}:
            target.delete(object_name(name))
            removed += 1
    for folder in (OBJECTS, MANIFESTS):
        for name, age in target.ages(folder, temporary=True).items():
            if age >= UNREFERENCED_AGE_S:
                target.delete(f"{folder}/{name}")
                removed += 1
    return {"expired": [m.id for m in expired], "kept": [m.id for m in kept],
            "objects_removed": removed}
