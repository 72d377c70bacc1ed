"""The rolling tail: a commit that writes only what it changes and reads nothing.

The head row lives in a small fragment, the *tail*, with the latest rows. Every write removes
the tail and writes a new one (the new head, the old tail's rows still live, the write's rows),
and deletes the rows it replaces elsewhere at the addresses a ``Layout`` already knows
(``LanceFragment.delete_rows``: no scan). It commits as one ``LanceOperation.Update`` against the
version it decided on, with no retries of Lance's own: Lance refuses an Update whose removed or
changed fragments a concurrent Update touched, and every write touches the tail, so two writes
decided on one version conflict and the second one decides again (compare-and-swap). A
compaction that leaves the tail out is rebased over (it changes no content).

A head that sits in a larger fragment, or in one with deleted rows (a table written by older
code, or compacted whole), is deleted by offset instead; the write's own fragment is the new
tail from then on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
from lance.commit import CommitConflictError
from lance.dataset import LanceOperation
from lance.fragment import write_fragments

from semmem import tracing
from semmem.store.files import sync_files, sync_manifest
from semmem.store.rows import HEAD_KEY

ADDR = "_rowaddr"
# The tail is uploaded whole by every write: kept under the 64 KiB an object-store read of a
# small file takes in one request (~1.7 KB a row at 384 dimensions).
TAIL_BYTES = 64 << 10
KEYS = pa.schema([pa.field("key", pa.string()), pa.field(ADDR, pa.uint64())])


def tail_limit(dim: int) -> int:
    """Rows a tail may hold before its rows are sealed into a fragment of their own."""
    return max(8, min(64, TAIL_BYTES // (dim * 4 + 512)))


def _keys(rows: pa.Table) -> pa.Table:
    return rows.select(["key", ADDR]).cast(KEYS)


def _deletion(meta: Any) -> Any:
    d = meta.deletion_file
    return None if d is None else (d.read_version, d.id, d.num_deleted_rows)


def fragments(ds: Any) -> dict[int, Any]:
    """Each fragment of ``ds`` and the identity of its deletion file (from the manifest)."""
    return {f.fragment_id: _deletion(f.metadata) for f in ds.get_fragments()}


@dataclass(frozen=True)
class Layout:
    """Where the rows of one table version are: the address of each key, and the tail."""

    version: int
    keys: pa.Table  # ``key`` and ``_rowaddr`` of every live row (``complete``) or those read
    fragments: dict[int, Any]  # fragment id → deletion file identity, at ``version``
    tail_id: int  # the fragment holding the head row
    tail: pa.Table | None  # its rows, when it is a rolling tail; None: delete the head there
    complete: bool = True  # every row's address is known (else: only the rows looked up)
    looked: frozenset[str] = frozenset()  # keys a partial layout looked up (absent ones: new)


def layout_of(ds: Any, rows: pa.Table, schema: pa.Schema, limit: int, *,
              complete: bool = True, looked: Iterable[str] = ()) -> Layout:
    """The layout of ``ds``'s version from rows read with their addresses (every row, or the
    rows a write looked up; then the tail, a small file, is read on its own)."""
    keys = _keys(rows).combine_chunks()
    at = pc.index(keys.column("key"), HEAD_KEY).as_py()
    if at < 0:
        raise ValueError("the partition table has no head row")
    addr = keys.column(ADDR)[at].as_py()
    tail_id = addr >> 32
    meta = ds.get_fragment(tail_id).metadata
    tail: pa.Table | None = None
    if meta.physical_rows <= limit and meta.deletion_file is None:
        if complete:
            fid = pc.shift_right(rows.column(ADDR), 32)
            tail = rows.filter(pc.equal(fid, tail_id))
        else:
            tail = ds.get_fragment(tail_id).to_table(with_row_address=True)
        tail = tail.sort_by(ADDR)
    return Layout(ds.version, keys, fragments(ds), tail_id, tail, complete, frozenset(looked))


def head_rows(ds: Any, columns: list[str], limit: int) -> pa.Table:
    """The head row of ``ds``'s version: looked for in the small fragments (a rolling tail
    holds it, whatever the partition's size), else by key in the whole table (a head in a
    large fragment: a table written before the tail, or compacted whole)."""
    where = f"key = '{HEAD_KEY}'"
    small = [f for f in ds.get_fragments() if f.metadata.physical_rows <= limit]
    if small:
        found = ds.scanner(fragments=small, columns=columns, filter=where).to_table()
        if found.num_rows:
            return found
    return ds.to_table(columns=columns, filter=where)


def _addresses(layout: Layout, keys: pa.Array) -> pa.Table:
    return layout.keys.filter(pc.is_in(layout.keys.column("key"), keys))


def _placed(ds: Any, layout: Layout, keys: list[str], hwm: int) -> Layout:
    """A partial layout with the addresses of ``keys`` it neither read nor knows to be new
    (an item number above the high-water mark is new) looked up: a write replacing a row
    must delete it, and only a complete layout knows every row."""
    if layout.complete:
        return layout
    have = set(layout.keys.column("key").to_pylist()) | layout.looked
    missing = [k for k in keys if k not in have
               and not (k.startswith("i:") and int(k[2:]) > hwm)]
    if not missing:
        return layout
    quoted = ", ".join("'" + k.replace("'", "''") + "'" for k in missing)
    found = ds.to_table(columns=["key"], filter=f"key IN ({quoted})", with_row_address=True)
    keys_now = pa.concat_tables([layout.keys, _keys(found)]).combine_chunks()
    return Layout(layout.version, keys_now, layout.fragments, layout.tail_id, layout.tail,
                  False, layout.looked | set(missing))


def commit(ds: Any, layout: Layout, rows: pa.Table, schema: pa.Schema, limit: int,
           hwm: int, discard: Callable[[list[str]], None], *,
           gate: Callable[[], None] = lambda: None,
           leftover: Callable[[list[str]], None] | None = None,
           durable: bool = False) -> tuple[Any, Layout | None]:
    """Commit ``rows`` (the new head and every changed row) against ``ds``'s version; returns
    the new dataset and its layout (``None`` when Lance rebased the commit over a compaction,
    or the layout was partial: read it again). ``hwm`` is the high-water mark the rows were
    decided on (items above it are new).

    ``gate`` runs once the files are written, right before the commit (the deadline and the
    write fence: ``store/commit/fence.py``); what it raises stops the commit. ``discard``
    deletes the data files of a commit that did not happen (stopped, or lost its race): they
    copy the tail's live rows, and a text forgotten later must not wait for the orphan sweep to
    leave the disk; ``leftover`` is given them when the commit failed otherwise (its outcome
    unknown: they are deleted only if no version references them). ``durable``: a local store, whose
    files are synced before the commit and the manifest after it.

    Raises:
        OSError: ``lance.commit.CommitConflictError`` when another write committed first
            (nothing was committed), or the store failed.
    """
    if layout.version != ds.version:
        raise ValueError("the layout is not of the dataset's version")
    names = sorted(set(rows.column("key").to_pylist()))
    layout = _placed(ds, layout, names, hwm)
    changed = pa.array(names, pa.string())
    keys, addr = layout.keys.column("key"), layout.keys.column(ADDR)
    fid = pc.shift_right(addr, 32)
    rolling = layout.tail is not None
    replaced = pc.is_in(keys, changed)
    if rolling:
        replaced = pc.and_(replaced, pc.not_equal(fid, layout.tail_id))
    deletes: dict[int, list[int]] = {}
    for a in pc.filter(addr, replaced).to_pylist():
        deletes.setdefault(a >> 32, []).append(a & 0xFFFFFFFF)
    removed: list[int] = []
    if layout.tail is None:  # the head sits in a large fragment: it was deleted above
        parts = [rows]
    else:
        kept = layout.tail.filter(pc.invert(pc.is_in(layout.tail.column("key"), changed)))
        kept = kept.select(schema.names).cast(schema)
        removed.append(layout.tail_id)
        if kept.num_rows + rows.num_rows <= limit:
            parts = [pa.concat_tables([kept, rows])]
        else:  # seal: the rows in a fragment of their own, the head alone in the new tail
            head = pc.equal(rows.column("key"), HEAD_KEY)
            parts = [pa.concat_tables([kept, rows.filter(pc.invert(head))]), rows.filter(head)]
    parts = [p.combine_chunks() for p in parts if p.num_rows]
    with tracing.span("semmem.commit.files"):
        written = [(p, write_fragments(p, ds, schema=schema)) for p in parts]  # a PUT each
        updated = []
        for f, offsets in sorted(deletes.items()):
            meta = ds.get_fragment(f).delete_rows(offsets)  # a PUT (+ a GET if it had any)
            if meta is None:
                removed.append(f)
            else:
                updated.append(meta)
    op = LanceOperation.Update(removed_fragment_ids=removed, updated_fragments=updated,
                               new_fragments=[m for _, ms in written for m in ms])
    paths = [m.files[0].path for _, ms in written for m in ms]
    try:
        if durable:
            with tracing.span("semmem.fsync.files"):
                sync_files(ds.uri, paths, [(m.id, m.deletion_file) for m in updated])
        with tracing.span("semmem.commit.gate"):
            gate()
    except BaseException:
        discard(paths)
        raise
    # A LIST (transactions since the version), the transaction, the manifest's conditional PUT.
    try:
        with tracing.span("semmem.commit.engine"):
            new = lance.LanceDataset.commit(ds, op, read_version=ds.version, max_retries=0)
    except CommitConflictError:
        # Lance reports a conflict only once it knows the manifest is not ours (it checks an
        # ambiguous conditional PUT itself): no version references these files.
        discard(paths)
        raise
    except BaseException:
        if leftover is not None:
            leftover(paths)
        raise
    if durable:
        with tracing.span("semmem.fsync.manifest"):
            sync_manifest(ds.uri, new.version)
    if new.version != ds.version + 1 or not layout.complete:
        return new, None
    by_path = {f.metadata.files[0].path: f.fragment_id for f in new.get_fragments()}
    drop = pa.array(sorted(set(removed)), pa.uint64())
    gone = pc.or_(pc.is_in(keys, changed), pc.is_in(fid, drop))
    out = [layout.keys.filter(pc.invert(gone))]
    tail_id, tail = layout.tail_id, None
    for data, metas in written:
        start = 0
        for m in metas:
            f = by_path[m.files[0].path]
            n = m.physical_rows
            out.append(pa.table({"key": data.column("key").slice(start, n),
                                 ADDR: pa.array([(f << 32) | i for i in range(n)],
                                                pa.uint64())}).cast(KEYS))
            if pc.any(pc.equal(data.column("key").slice(start, n), HEAD_KEY)).as_py():
                tail_id = f
                tail = data.slice(start, n) if n <= limit else None
            start += n
    keys_now = pa.concat_tables(out).combine_chunks()
    return new, Layout(new.version, keys_now, fragments(new), tail_id, tail)


def forward(layout: Layout, new: Any, schema: pa.Schema, limit: int
            ) -> tuple[Layout, pa.Table]:
    """The layout of ``new``'s version from ``layout`` (an older one, complete), and the rows of
    the fragments that are new or whose deletions changed (read with their addresses; a GET or
    so each): every other row is where it was."""
    now = fragments(new)
    was = layout.fragments
    drop = sorted(f for f in was if f not in now or now[f] != was[f])
    read = [f for f in now if f not in was or f in drop]
    fid = pc.shift_right(layout.keys.column(ADDR), 32)
    kept = layout.keys.filter(pc.invert(pc.is_in(fid, pa.array(drop, pa.uint64()))))
    if read:
        rows = new.scanner(fragments=[new.get_fragment(f) for f in read],
                           with_row_address=True).to_table()
    else:
        rows = new.scanner(limit=0, with_row_address=True).to_table()
    keys = pa.concat_tables([kept, _keys(rows)]).combine_chunks()
    at = pc.index(keys.column("key"), HEAD_KEY).as_py()
    if at < 0:
        raise ValueError("the partition table has no head row")
    tail_id = keys.column(ADDR)[at].as_py() >> 32
    tail: pa.Table | None = None
    if tail_id == layout.tail_id and tail_id not in read:
        tail = layout.tail
    else:
        meta = new.get_fragment(tail_id).metadata
        if meta.physical_rows <= limit and meta.deletion_file is None:
            own = rows.filter(pc.equal(pc.shift_right(rows.column(ADDR), 32), tail_id))
            tail = own.sort_by(ADDR)
    return Layout(new.version, keys, now, tail_id, tail), rows
