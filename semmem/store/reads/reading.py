"""Arrow rows of a partition table → the store's views (``semmem.store.views``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from semmem.audience import APPLICATION_SPACES, SYSTEM_SPACES
from semmem.errors import Unavailable
from semmem.items import EXPIRES, Item, Vectors
from semmem.items.address import space_tag
from semmem.store.commit.tombstone import GONE
from semmem.store.rows import ITEM_COLUMNS, KIND_HEAD, KIND_ITEM, KIND_OP
from semmem.store.schema import LIVE_ITEMS, head_counts, split_attrs
from semmem.store.views import Candidates, Head, OpRecord, Tombstone


@dataclass
class Decoded:
    """The rows of one read, sorted out by kind (items in number order)."""

    head: Head
    items: list[Item]
    vectors: Vectors
    tombstones: dict[int, Tombstone] = field(default_factory=dict)
    ops: dict[str, OpRecord] = field(default_factory=dict)


def not_models_in(ds: Any) -> int:
    """A table version's live items that are not the model's (``semmem.audience``), counted
    through the ``tags`` index by their keyed spaces' tags (a table without ``tags`` holds no
    keyed item)."""
    if "tags" not in ds.schema.names:
        return 0
    return int(ds.count_rows(filter=_NOT_MODELS))


def not_models_text_bytes(ds: Any) -> int:
    """UTF-8 bytes of the live texts not the model's (``not_models_in``), read in full (a
    partition too large for a snapshot, under a byte quota)."""
    if "tags" not in ds.schema.names:
        return 0
    texts = ds.to_table(columns=["text"], filter=_NOT_MODELS).column("text")
    return int(pc.sum(pc.binary_length(texts)).as_py() or 0)


_NOT_MODELS = (f"{LIVE_ITEMS} AND array_has_any(tags, ["
               + ", ".join(f"'{space_tag(s)}'" for s in sorted(APPLICATION_SPACES | SYSTEM_SPACES))
               + "])")


def live_counts(ds: Any) -> tuple[int, int, int]:
    """A table version's live items, how many of them carry their own expiry, and how many
    are not the model's, counted (a head of older layout carries none of them: every live
    row is read once, then carried)."""
    live = int(ds.count_rows(filter=LIVE_ITEMS))
    attrs = ds.to_table(columns=["attrs"], filter=f"{LIVE_ITEMS} AND attrs LIKE "
                        f"'%{EXPIRES}%'").column("attrs").to_pylist()
    return live, sum(1 for raw in attrs if EXPIRES in split_attrs(raw)[0]), not_models_in(ds)


def decode(partition: str, version: int, data: pa.Table, dim: int) -> Decoded:
    """Sort a partition's rows into head, live items (with vectors), tombstones and records.

    Raises:
        Unavailable: the table's head names another partition (a hash clash).
    """
    py = {name: data.column(name).to_pylist() for name in data.column_names if name != "vector"}
    head = Head(partition, version, 0, 0, None)
    item_rows: list[int] = []
    tombstones: dict[int, Tombstone] = {}
    ops: dict[str, OpRecord] = {}
    for i, kind in enumerate(py["kind"]):
        if kind == KIND_HEAD:
            # A deleted partition's tombstone names none (``store/commit/tombstone.py``): an
            # empty partition from there on.
            if py["text"][i] not in (partition, GONE):
                raise Unavailable("partition table belongs to another partition (hash clash)")
            # Two heads are a defect (``semmem check`` repairs it): the highest mark wins, so
            # no number below it is handed out again meanwhile.
            if py["n"][i] >= head.hwm:
                live, expiring, application = head_counts(py["attrs"][i] if "attrs" in py
                                                          else None)
                head = Head(partition, version, py["n"][i], max(py["seq"][i], head.seq),
                            py["model"][i], live, expiring, application,
                            gone=py["text"][i] == GONE)
            else:
                head = replace(head, seq=max(py["seq"][i], head.seq))
        elif kind == KIND_ITEM:
            if py["forgotten"][i]:
                tombstones[py["n"][i]] = Tombstone(py["n"][i], py["seq"][i], py["updated"][i],
                                                   split_attrs(py["attrs"][i])[1])
            else:
                item_rows.append(i)
        elif kind == KIND_OP:
            ops[py["key"][i]] = OpRecord(
                py["key"][i], py["op_fp"][i], py["op_result"][i], py["op_expires"][i]
            )
    item_rows.sort(key=lambda i: py["n"][i])
    items = [
        Item(
            n=py["n"][i], text=py["text"][i], ts=py["ts"][i], updated=py["updated"][i],
            revision=py["revision"][i], seq=py["seq"][i], model=py["model"][i],
            attrs=attrs, created=created,
        )
        for i in item_rows
        for attrs, created in [split_attrs(py["attrs"][i])]
    ]
    if item_rows:
        vec_col = data.column("vector").combine_chunks()
        flat = vec_col.take(pa.array(item_rows)).flatten().to_numpy(zero_copy_only=False)
        width = data.schema.field("vector").type.list_size  # the table's, not the model's
        vectors = np.ascontiguousarray(flat.reshape(len(item_rows), width), np.float32)
    else:
        vectors = np.zeros((0, dim), np.float32)
    return Decoded(head, items, vectors, tombstones, ops)


# What an item field holds when a search did not read its column.
_EMPTY: dict[str, Any] = {"key": "", "text": "", "ts": 0, "updated": 0, "revision": 0, "seq": 0,
                          "model": ""}


def candidates(head: Head, data: pa.Table, dim: int) -> Candidates:
    """The live items among ``data``'s rows (an index search's or a scan's), in number order.

    ``data`` needs ``kind``, ``n``, ``forgotten`` and ``vector``; a column it lacks (a search
    that reads fewer, ``rows.HINT_COLUMNS``) leaves its field empty in every item."""
    names, size = set(data.column_names), data.num_rows
    py: dict[str, list[Any]] = {
        c: data.column(c).to_pylist() if c in names else [_EMPTY.get(c)] * size
        for c in ITEM_COLUMNS if c != "vector"}
    rows = sorted((i for i, (kind, gone) in enumerate(zip(py["kind"], py["forgotten"],
                                                          strict=True))
                   if kind == KIND_ITEM and not gone), key=lambda i: py["n"][i])
    items = [
        Item(n=py["n"][i], text=py["text"][i], ts=py["ts"][i], updated=py["updated"][i],
             revision=py["revision"][i], seq=py["seq"][i], model=py["model"][i], attrs=attrs,
             created=created)
        for i in rows
        for attrs, created in [split_attrs(py["attrs"][i])]
    ]
    flat = data.column("vector").combine_chunks().take(pa.array(rows, pa.int64())) \
        .flatten().to_numpy(zero_copy_only=False)
    vectors = np.ascontiguousarray(flat.reshape(len(rows), dim), np.float32)
    return Candidates(items, vectors, head)
