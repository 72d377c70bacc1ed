"""The layout of a partition table: schema, row keys, and the rows one write commits.

A partition table holds three kinds of row, keyed by ``key``:

- the head row (``key = "head"``): highest number ever assigned (``n``), the partition's write
  sequence (``seq``), the partition name (``text``), the model (``model``) and, in ``attrs``,
  the live item count and how many live items carry their own expiry (``head_attrs``; a
  table of older layout lacks them until its next commit);
- item rows (``key = "i:<n>"``): live items and the tombstones of forgotten ones (no text);
  ``attrs`` holds the owner's record fields and, under ``CREATED``, the write sequence that
  created the item (kept out of ``Item.attrs``; rows written before it was recorded lack it);
  ``tags`` holds a hash of each of the item's metadata pairs (``semmem.items.metadata``) and of
  a keyed item's address and space (``semmem.items.address``), derived from ``attrs`` where
  rows are built, for filters, lookups by key and their ``LABEL_LIST`` index;
- op rows (``key = "o:<sha256(operationId)>"``): idempotency records.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import lance
import numpy as np
import pyarrow as pa

from semmem.items import Item, now_ms
from semmem.items.address import row_tags
from semmem.store.commit.conflicts import retry_conflicts
from semmem.store.files import open_dataset
from semmem.store.rows import (
    CREATED,
    HEAD_KEY,
    KIND_HEAD,
    KIND_ITEM,
    KIND_OP,
    NEW,
    ItemRow,
    Mutation,
    dkey_of,
)
from semmem.store.views import Head, OpRecord, Tombstone

# 2: ``dkey`` (duplicate-detection key) on item rows; 3: ``tags`` (metadata pairs, hashed)
SCHEMA_VERSION = 3
LIVE_ITEMS = f"kind = {KIND_ITEM} AND forgotten = false"
HEAD_COLUMNS = ["key", "kind", "n", "text", "seq", "model", "attrs"]  # what ``decode`` reads


def split_attrs(raw: str | None) -> tuple[dict[str, Any], int | None]:
    """An item row's ``attrs`` column: the record fields, and the creation sequence if any."""
    attrs: dict[str, Any] = json.loads(raw) if raw else {}
    created = attrs.pop(CREATED, None)
    return attrs, created if isinstance(created, int) else None


Counts = tuple[int | None, int | None, int | None]  # live, expiring, not the model's


def head_attrs(live: int | None, expiring: int | None, application: int | None) -> str | None:
    """The head row's ``attrs``: the counts it carries (``None`` when they are not known)."""
    if live is None or expiring is None or application is None:
        return None
    return json.dumps({"live": int(live), "expiring": int(expiring),
                       "application": int(application)})


def head_counts(raw: str | None) -> Counts:
    """The live count, the expiring count and the count of live items not the model's
    (``semmem.audience``) a head row's ``attrs`` carries (``None``: not all carried, a table
    of older layout)."""
    try:
        attrs = json.loads(raw) if raw else {}
    except ValueError:
        return None, None, None
    counts = attrs.get("live"), attrs.get("expiring"), attrs.get("application")
    if not all(isinstance(c, int) for c in counts):
        return None, None, None
    return counts


# The Lance file format of a new partition table's data files. 2.1 rather than LanceDB's
# default 2.2: a recall reads its candidates' columns at random rows, and at a million rows
# that read took 0.6-0.75x as long in 2.1 (``benchmarks/cases/candidate_reads.py``). A table keeps
# the format it was created with; tables made in 2.2 are read as they are.
FILE_FORMAT = "2.1"
NEW_TABLE_OPTIONS = {"new_table_data_storage_version": FILE_FORMAT}


def partition_schema(dim: int) -> pa.Schema:
    """Arrow schema of a partition table (``SCHEMA_VERSION`` 3)."""
    return pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("kind", pa.int8(), nullable=False),
            pa.field("n", pa.int64(), nullable=False),
            pa.field("text", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("ts", pa.int64()),
            pa.field("updated", pa.int64()),
            pa.field("revision", pa.int64()),
            pa.field("seq", pa.int64()),
            pa.field("model", pa.string()),
            pa.field("forgotten", pa.bool_()),
            pa.field("attrs", pa.string()),
            pa.field("op_fp", pa.string()),
            pa.field("op_result", pa.string()),
            pa.field("op_expires", pa.int64()),
            pa.field("dkey", pa.string()),  # v2, last so a migrated v1 table has the same order
            pa.field("tags", pa.list_(pa.string())),  # v3, after dkey for the same reason
        ],
        metadata={"semmem.schema_version": str(SCHEMA_VERSION)},
    )


def head_row(partition: str, model: str) -> Rows:
    """The first row of a new partition table."""
    now = now_ms()
    rows = Rows()
    rows.add(key=HEAD_KEY, kind=KIND_HEAD, n=0, text=partition, ts=now, updated=now,
             revision=0, seq=0, model=model, attrs=head_attrs(0, 0, 0))
    return rows


@dataclass(frozen=True)
class Batch:
    """What one commit writes: the rows of one or more mutations, decided in order on one
    version (a later mutation's row of the same item wins), under one new write sequence,
    with the partition's counts once they are applied (``None``: the head carries none)."""

    head: Head  # the version the mutations were decided on
    items: dict[int, ItemRow]
    ops: dict[str, OpRecord]
    hwm: int
    live: int | None = None
    expiring: int | None = None
    application: int | None = None

    @classmethod
    def of(cls, head: Head, mutations: Sequence[Mutation], *, live: int | None = None,
           expiring: int | None = None, application: int | None = None) -> Batch:
        """The mutations, combined; ``live``, ``expiring`` and ``application``: the counts
        after them."""
        items: dict[int, ItemRow] = {}
        ops: dict[str, OpRecord] = {}
        for m in mutations:
            items.update((it.n, it) for it in m.items)
            if m.op is not None:
                ops[m.op.key] = m.op
            ops.update((r.key, r) for r in m.records)
        hwm = max([head.hwm, *(m.hwm or 0 for m in mutations)])
        return cls(head, items, ops, hwm, live, expiring, application)

    @property
    def seq(self) -> int:
        """The write sequence the batch commits under."""
        return self.head.seq + 1

    def rows(self, model: str) -> Rows:
        """The new head and every changed row."""
        now = now_ms()
        rows = Rows()
        rows.add(key=HEAD_KEY, kind=KIND_HEAD, n=self.hwm, text=self.head.partition, ts=now,
                 updated=now, revision=0, seq=self.seq, model=model,
                 attrs=head_attrs(self.live, self.expiring, self.application))
        for it in self.items.values():
            created = self.created(it)
            attrs = it.attrs if created is None else {**it.attrs, CREATED: created}
            rows.add(
                key=f"i:{it.n}", kind=KIND_ITEM, n=it.n, text=it.text, vector=it.vector,
                ts=it.ts, updated=it.updated, revision=it.revision, seq=self.seq,
                model=None if it.forgotten else model, forgotten=it.forgotten,
                attrs=json.dumps(attrs, ensure_ascii=False) if attrs else None,
                dkey=None if it.text is None else dkey_of(it.text),
            )
        for op in self.ops.values():
            rows.add(key=op.key, kind=KIND_OP, n=0, ts=now, updated=now, revision=0,
                     seq=self.seq, op_fp=op.fingerprint, op_result=op.result,
                     op_expires=op.expires)
        return rows

    def created(self, row: ItemRow) -> int | None:
        """The creation sequence a row commits with (this batch's, for a new item)."""
        return self.seq if row.created == NEW else row.created

    def changes(self, model: str) -> tuple[list[Item], list[np.ndarray], dict[int, Tombstone]]:
        """The batch's items as committed: live ones with their vectors, and tombstones."""
        items: list[Item] = []
        vectors: list[np.ndarray] = []
        tombstones: dict[int, Tombstone] = {}
        for it in self.items.values():
            if it.forgotten or it.text is None or it.vector is None:
                tombstones[it.n] = Tombstone(it.n, self.seq, it.updated, self.created(it))
                continue
            items.append(Item(n=it.n, text=it.text, ts=it.ts, updated=it.updated,
                              revision=it.revision, seq=self.seq, model=model,
                              attrs=dict(it.attrs), created=self.created(it)))
            vectors.append(np.asarray(it.vector, np.float32))
        return items, vectors, tombstones


class Rows:
    """Rows gathered column by column, so vectors go to Arrow as one array, not as lists."""

    _NAMES = ("key", "kind", "n", "text", "ts", "updated", "revision", "seq", "model",
              "forgotten", "attrs", "op_fp", "op_result", "op_expires", "dkey", "tags")

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name in self._NAMES}
        self.vectors: list[np.ndarray | None] = []

    def add(self, *, vector: np.ndarray | None = None, forgotten: bool = False,
            **values: Any) -> None:
        """Append one row; columns not named are null, and an item row's ``tags`` are its
        metadata's and its keyed address's (derived here, so every writer of rows keeps them
        true)."""
        if values.get("kind") == KIND_ITEM and "tags" not in values:
            values["tags"] = row_tags(values.get("attrs"))
        for name in self._NAMES:
            self.cols[name].append(forgotten if name == "forgotten" else values.get(name))
        self.vectors.append(vector)

    def table(self, schema: pa.Schema) -> pa.Table:
        """The rows as an Arrow table of ``schema``."""
        dim = schema.field("vector").type.list_size
        valid = np.array([v is not None for v in self.vectors], dtype=bool)
        flat = np.zeros((len(self.vectors), dim), dtype=np.float32)
        for i, v in enumerate(self.vectors):
            if v is not None:
                flat[i] = v
        vector = pa.FixedSizeListArray.from_arrays(
            pa.array(flat.reshape(-1), pa.float32()), dim, mask=pa.array(~valid)
        )
        arrays = [
            vector if f.name == "vector" else pa.array(self.cols[f.name], f.type)
            for f in schema
        ]
        return pa.Table.from_arrays(arrays, schema=schema)


def migrate_v1(uri: str, storage_options: dict[str, str]) -> None:
    """Schema 1 → 2: add the ``dkey`` column, computed from each item's text."""

    def add(batch: pa.RecordBatch) -> pa.RecordBatch:
        texts = batch.column("text").to_pylist()
        kinds = batch.column("kind").to_pylist()
        keys = [dkey_of(t) if k == KIND_ITEM and t is not None else None
                for t, k in zip(texts, kinds, strict=True)]
        return pa.RecordBatch.from_arrays([pa.array(keys, pa.string())], names=["dkey"])

    def migrate() -> None:
        ds = open_dataset(uri, storage_options)
        if "dkey" not in ds.schema.names:  # another process may have done it meanwhile
            ds.add_columns(lance.batch_udf(output_schema=pa.schema(
                [pa.field("dkey", pa.string())]))(add), read_columns=["text", "kind"])

    retry_conflicts(migrate)


def migrate_v2(uri: str, storage_options: dict[str, str]) -> None:
    """Schema 2 → 3: add the ``tags`` column, derived from each item's ``attrs``."""

    def add(batch: pa.RecordBatch) -> pa.RecordBatch:
        found = [row_tags(a) if k == KIND_ITEM else None
                 for a, k in zip(batch.column("attrs").to_pylist(),
                                 batch.column("kind").to_pylist(), strict=True)]
        return pa.RecordBatch.from_arrays([pa.array(found, pa.list_(pa.string()))],
                                          names=["tags"])

    def migrate() -> None:
        ds = open_dataset(uri, storage_options)
        if "tags" not in ds.schema.names:  # another process may have done it meanwhile
            ds.add_columns(lance.batch_udf(output_schema=pa.schema(
                [pa.field("tags", pa.list_(pa.string()))]))(add), read_columns=["attrs", "kind"])

    retry_conflicts(migrate)
