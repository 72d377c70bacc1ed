"""A partition read whole at one version, and a new partition written whole in one commit:
the store's side of backups (``semmem/lifecycle/``).

A dump is logical: the latest version's head, live items (with vectors), tombstones and the
ledgers of forgotten messages (``conversations/forgotten.py``: keyed digests, no text), which a
copy needs so that what was forgotten stays forgotten in it. Deleted rows and older versions,
which still hold forgotten or replaced texts until maintenance, are never read. Operations'
idempotency records are left out (they name results, not facts, and expire).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from semmem.audience import not_models
from semmem.errors import InvalidInput, Unavailable
from semmem.items import Item, Vectors, now_ms
from semmem.store.commit.conflicts import moved_on
from semmem.store.files import filesystem, open_dataset
from semmem.store.reads.reading import decode
from semmem.store.rows import (
    CREATED,
    HEAD_KEY,
    ITEM_COLUMNS,
    KIND_HEAD,
    KIND_ITEM,
    KIND_OP,
    LEDGER,
    dkey_of,
    table_name,
)
from semmem.store.schema import Rows, head_attrs
from semmem.store.views import Head, Tombstone, expiring

if TYPE_CHECKING:
    from semmem.store.tables import Store

READ_ATTEMPTS = 5


@dataclass(frozen=True)
class Dump:
    """One partition as of one version: head, live items in number order, their vectors
    (one row each), tombstones and its sessions' ledgers (record key → the forgotten
    messages' HMACs, under the store's secret)."""

    head: Head
    items: list[Item]
    vectors: Vectors
    tombstones: dict[int, Tombstone]
    ledgers: dict[str, list[str]] = field(default_factory=dict)


async def read_partition(store: Store, partition: str) -> Dump | None:
    """The partition at its latest version, every row read from that one version (``None``
    if it has no table). A read that fails because a cleanup removed the version's files
    under it is made again at the newer version."""
    tbl = await store.conn.table(partition, create=False)
    if tbl is None:
        return None
    uri = str(await tbl.uri())

    opened: list[int] = []

    def read() -> Dump:
        ds = open_dataset(uri, store.storage_options, full_reads=True)  # latest, pinned
        opened.append(int(ds.version))
        data = ds.to_table(columns=ITEM_COLUMNS, filter=f"kind != {KIND_OP}")
        got = decode(partition, int(ds.version), data, store.dim)
        ledgers: dict[str, list[str]] = {}
        if "op_fp" in ds.schema.names:  # (a table of an older schema has no records)
            for r in ds.to_table(columns=["key", "op_result"],
                                 filter=f"kind = {KIND_OP} AND op_fp = '{LEDGER}'").to_pylist():
                found = json.loads(r["op_result"] or "[]")
                if isinstance(found, list):
                    ledgers[str(r["key"])] = sorted(m for m in found if isinstance(m, str))
        return Dump(got.head, got.items, got.vectors, got.tombstones, ledgers)

    for attempt in range(READ_ATTEMPTS):
        opened.clear()
        try:
            return await asyncio.to_thread(read)
        except Unavailable:
            raise
        except Exception as exc:  # the engine's errors are not a typed tree
            if attempt == READ_ATTEMPTS - 1 or not opened \
                    or not await moved_on(tbl, opened[0]):
                raise Unavailable(f"cannot read partition: {exc}") from exc
    raise AssertionError("unreachable")


async def latest_version(store: Store, partition: str) -> int | None:
    """The partition's latest version (a listing, no data read), ``None`` without a table."""
    tbl = await store.conn.table(partition, create=False)
    if tbl is None:
        return None
    await tbl.checkout_latest()
    return int(await tbl.version())


async def read_head(store: Store, partition: str) -> Head | None:
    """The partition's head at its latest version (one small read), ``None`` without a table."""
    version = await latest_version(store, partition)
    tbl = await store.conn.table(partition, create=False)
    if version is None or tbl is None:
        return None
    data = await tbl.query().where(f"key = '{HEAD_KEY}'").select(ITEM_COLUMNS).to_arrow()
    return decode(partition, version, data, store.dim).head


async def created_at(store: Store) -> dict[str, int]:
    """When each partition's table was created (its registry entry), by partition: tells a
    partition deleted and made again from the one a backup holds."""
    rows = await store.conn.registry.rows()
    return {str(v["partition"]): int(v.get("created") or 0)
            for k, v in rows.items() if k.startswith("t:")}


async def write_partition(store: Store, dump: Dump, created: int | None = None) -> None:
    """Create the partition's table holding exactly ``dump`` (head, items with their stored
    vectors, tombstones, ledgers) in one commit, with its registry entry first, as a first
    write would; ``created``: the original table's creation time, kept so that the restored
    store can be the ledger of a restore of an older backup.

    Raises:
        InvalidInput: the partition already has a table.
    """
    partition = dump.head.partition
    if await store.conn.table(partition, create=False) is not None:
        raise InvalidInput(f"partition {partition!r} already exists in {store.uri}")
    name = table_name(partition)
    await store.conn.registry.add_table(name, partition, created)
    data = _rows(dump, store.model_id).table(store.schema)
    if not await store.conn.create_table(name, data):
        raise InvalidInput(f"partition {partition!r} already exists in {store.uri}")
    store.conn.forget_handle(partition)


def _rows(dump: Dump, model: str) -> Rows:
    now = now_ms()
    rows = Rows()
    head = dump.head
    rows.add(key=HEAD_KEY, kind=KIND_HEAD, n=head.hwm, text=head.partition, ts=now,
             updated=now, revision=0, seq=head.seq, model=model,
             attrs=head_attrs(len(dump.items), expiring(dump.items), not_models(dump.items)))
    for it, vector in zip(dump.items, dump.vectors, strict=True):
        attrs: dict[str, Any] = dict(it.attrs)
        if it.created is not None:
            attrs[CREATED] = it.created
        rows.add(key=f"i:{it.n}", kind=KIND_ITEM, n=it.n, text=it.text, vector=vector,
                 ts=it.ts, updated=it.updated, revision=it.revision, seq=it.seq, model=model,
                 attrs=json.dumps(attrs, ensure_ascii=False) if attrs else None,
                 dkey=dkey_of(it.text))
    for t in dump.tombstones.values():
        rows.add(key=f"i:{t.n}", kind=KIND_ITEM, n=t.n, ts=t.updated, updated=t.updated,
                 revision=0, seq=t.seq, forgotten=True,
                 attrs=None if t.created is None else json.dumps({CREATED: t.created}))
    for key, macs in sorted(dump.ledgers.items()):
        rows.add(key=key, kind=KIND_OP, n=0, ts=now, updated=now, revision=0, seq=head.seq,
                 op_fp=LEDGER, op_result=json.dumps(sorted(macs)), op_expires=None)
    return rows


def is_empty(uri: str, storage_options: dict[str, str]) -> bool:
    """Whether nothing is stored at ``uri`` yet (a missing directory or prefix is empty)."""
    fs, path = filesystem(uri, storage_options)
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
    except NotADirectoryError:
        return False
    return not infos
