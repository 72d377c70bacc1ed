"""``semmem check``: a partition table's invariants, and the repair of what a blind commit did.

The invariants: exactly one head row; one row per key; the head's high-water mark at least
every number; the live counts the head carries (where it carries them) those of the rows;
tombstones hold no text or vector; every file the latest version references exists. A repair
keeps every acknowledged, unforgotten text: of two different texts under one number the first
written keeps it and the other gets a fresh number; a tombstone beside a live row of its
number wins (the forget stands, and the purge that follows removes the text); a text held
twice under one number is kept once; the head carries the counts of the rows as repaired. It
commits as one fenced write on the latest version.
"""

from __future__ import annotations

import asyncio
import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from semmem.audience import Audience, audience_of
from semmem.items import EXPIRES
from semmem.store.commit.tail import commit, layout_of
from semmem.store.files import filesystem, open_dataset
from semmem.store.rows import KIND_HEAD, KIND_ITEM, KIND_OP, ItemRow, Mutation, table_name
from semmem.store.schema import Batch, head_counts, split_attrs
from semmem.store.views import Head, OpRecord

if TYPE_CHECKING:
    from semmem.store.connection import Connection
    from semmem.store.reads.snapshots import Snapshots
    from semmem.store.upkeep.compaction import Upkeep


class Checked(Protocol):
    """What a check uses of ``Store`` (named so, not imported: the store calls the check)."""

    conn: Connection
    storage_options: dict[str, str]
    model_id: str
    snapshots: Snapshots
    upkeep: Upkeep


@dataclass
class CheckReport:
    """What ``check_partition`` found (and did)."""

    partition: str
    version: int = 0
    rows: int = 0
    problems: list[str] = field(default_factory=list)
    renumbered: dict[int, int] = field(default_factory=dict)  # a second text's old → new n
    forgotten: list[int] = field(default_factory=list)  # numbers whose forget won
    repaired: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {"partition": self.partition, "version": self.version, "rows": self.rows,
                "ok": not self.problems, "problems": self.problems,
                "renumbered": {str(k): v for k, v in self.renumbered.items()},
                "forgotten": self.forgotten, "repaired": self.repaired}


@dataclass
class _Found:
    problems: list[str]
    mutations: list[Mutation]
    renumbered: dict[int, int]
    forgotten: list[int]
    head: Head


def _item_row(r: dict[str, Any], n: int | None = None, forgotten: bool = False) -> ItemRow:
    attrs, created = split_attrs(r["attrs"])
    vector = None if forgotten or r["vector"] is None else np.asarray(r["vector"], np.float32)
    return ItemRow(n if n is not None else r["n"], None if forgotten else r["text"], vector,
                   r["ts"], r["updated"], r["revision"], forgotten=forgotten, attrs=attrs,
                   created=created)


def inspect(partition: str, version: int, data: pa.Table) -> _Found:
    """The invariants of one version's rows, and the mutations that repair them."""
    rows = data.drop_columns([c for c in data.column_names if c.startswith("_")]).to_pylist()
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_key[r["key"]].append(r)
    heads = by_key.get("head", [])
    problems: list[str] = []
    if len(heads) != 1:
        problems.append(f"{len(heads)} head rows")
    hwm = max((h["n"] for h in heads), default=0)
    seq = max((r["seq"] for r in rows), default=0)
    model = next((h["model"] for h in heads if h["n"] == hwm), None)
    numbers = [r["n"] for r in rows if r["kind"] == KIND_ITEM]
    if numbers and max(numbers) > hwm:
        problems.append(f"number {max(numbers)} above the high-water mark {hwm}")
    items: list[ItemRow] = []
    ops: list[OpRecord] = []
    renumbered: dict[int, int] = {}
    forgotten: list[int] = []
    fresh = max([hwm, *numbers])
    for key, group in sorted(by_key.items()):
        kind = group[0]["kind"]
        if kind == KIND_ITEM:
            n = group[0]["n"]
            dead = [r for r in group if r["forgotten"]]
            live = sorted((r for r in group if not r["forgotten"]),
                          key=lambda r: (r["ts"], r["seq"]))
            texty = [r for r in dead if r["text"] is not None or r["vector"] is not None]
            if texty:
                problems.append(f"tombstone {n} holds a text or vector")
            if len(group) == 1 and not texty:
                continue
            if len(group) > 1:
                problems.append(f"{len(group)} rows for number {n}")
            if dead:
                if live:
                    forgotten.append(n)
                items.append(_item_row(dead[0], forgotten=True))
                continue
            items.append(_item_row(live[0]))
            seen = {live[0]["text"]}
            for r in live[1:]:
                if r["text"] in seen:
                    continue
                seen.add(r["text"])
                fresh += 1
                renumbered.setdefault(n, fresh)
                items.append(_item_row(r, n=fresh))
        elif kind == KIND_OP and len(group) > 1:
            problems.append(f"{len(group)} records for one operation")
            r = max(group, key=lambda r: r["seq"])
            ops.append(OpRecord(key, r["op_fp"], r["op_result"], r["op_expires"]))
    count, due, apps = _counts(rows, items)
    carried = head_counts(next((h["attrs"] for h in heads if h["n"] == hwm), None))
    # Beside another problem the counts are the repair's to set (a doubled row is counted
    # once); a head of older layout carries none.
    if not problems and carried != (None, None, None) and carried != (count, due, apps):
        problems.append(f"the head counts {carried[0]} live items ({carried[1]} with an "
                        f"expiry, {carried[2]} not the model's), the rows {count} ({due}, "
                        f"{apps})")
    mutations = [Mutation(items=items, hwm=fresh)] if problems else []
    mutations += [Mutation(op=op) for op in ops]
    return _Found(problems, mutations, renumbered, sorted(set(forgotten)),
                  Head(partition, version, hwm, seq, model, count, due, apps))


def _counts(rows: list[dict[str, Any]], repaired: list[ItemRow]) -> tuple[int, int, int]:
    """Live items, those with an expiry of their own, and those not the model's
    (``semmem.audience``), once ``repaired`` is committed (every number it names has one row
    then; the others keep theirs)."""
    state: dict[int, tuple[bool, dict[str, Any]]] = {
        r["n"]: (bool(r["forgotten"]), split_attrs(r["attrs"])[0])
        for r in rows if r["kind"] == KIND_ITEM}
    state.update((it.n, (it.forgotten, it.attrs)) for it in repaired)
    live = [attrs for gone, attrs in state.values() if not gone]
    return len(live), sum(1 for attrs in live if EXPIRES in attrs), \
        sum(1 for attrs in live if audience_of(attrs) is not Audience.MODEL)


def missing_files(uri: str, storage_options: dict[str, str], ds: Any) -> list[str]:
    """The files the dataset's version references that do not exist."""
    fs, table = filesystem(uri, storage_options)
    paths = []
    for frag in ds.get_fragments():
        meta = frag.metadata
        paths += [f"{table}/data/{f.path}" for f in meta.data_files()]
        if meta.deletion_file is not None:
            name = meta.deletion_file.path(frag.fragment_id).rsplit("/", 1)[-1]
            paths.append(f"{table}/_deletions/{name}")
    infos = fs.get_file_info(paths) if paths else []
    return [info.path.rsplit("/", 1)[-1] for info in infos if info.type.name == "NotFound"]


def check_table(uri: str, storage_options: dict[str, str] | None = None) -> list[str]:
    """The broken invariants of a partition table's latest version, by its URI alone (its
    partition name is not needed to check it): for tests and the soak's checker."""
    ds = open_dataset(uri, storage_options or {})
    found = inspect("", int(ds.version), ds.to_table(with_row_address=True))
    return found.problems + [f"missing file {name}"
                             for name in missing_files(uri, storage_options or {}, ds)]


async def check_partition(store: Checked, partition: str, *, repair: bool = False
                          ) -> CheckReport:
    """Check ``partition``'s latest version; with ``repair``, commit the fix (then the caller
    purges: a forget that won leaves its text in old versions until then)."""
    report = CheckReport(partition)
    uri = await store.conn.uri_of(partition)
    if uri is None:
        return report
    for _attempt in range(10):
        ds = await asyncio.to_thread(open_dataset, uri, store.storage_options)
        data = await asyncio.to_thread(ds.to_table, with_row_address=True)
        found = inspect(partition, int(ds.version), data)
        gone = await asyncio.to_thread(missing_files, uri, store.storage_options, ds)
        report.version, report.rows = int(ds.version), data.num_rows
        report.problems = found.problems + [f"missing file {name}" for name in gone]
        report.renumbered, report.forgotten = found.renumbered, found.forgotten
        if not repair or not found.mutations:
            return report
        batch = Batch.of(found.head, found.mutations, live=found.head.live,
                         expiring=found.head.expiring, application=found.head.application)
        schema = ds.schema  # the table's own (a store opened with another model may check)
        rows = batch.rows(found.head.model or store.model_id).table(schema)
        heads = pc.equal(data.column("kind"), KIND_HEAD)  # a head first: the tail's
        ordered = pa.concat_tables([data.filter(heads), data.filter(pc.invert(heads))])
        layout = layout_of(ds, ordered, schema, store.snapshots.tail_rows)
        try:
            await asyncio.to_thread(commit, ds, layout, rows, schema,
                                    store.snapshots.tail_rows, found.head.hwm,
                                    lambda names: store.upkeep.discard_files(uri, names),
                                    gate=functools.partial(_latest, ds))
        except _Moved:
            continue
        except OSError:
            continue  # another write landed first: check its version
        store.snapshots.drop(table_name(partition))
        report.repaired = True
        return report
    raise OSError("the partition kept changing while it was being repaired")


class _Moved(Exception):
    pass


def _latest(ds: Any) -> None:
    if int(ds.latest_version) != int(ds.version):
        raise _Moved
