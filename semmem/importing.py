"""Bulk writes: reading import files (JSONL records, or a JSON map of records keyed by slug)
and committing them in batches; re-embedding partitions for ``reindex``.

- JSONL: one ``{"text", "n"?, "ts"?, "updated"?, "revision"?, "note"?, "status"?, "surfacing"?,
  "mergedInto"?, "slug"?, "metadata"?, "keyed"?, "piece"?, "store"?}`` object per line (what
  ``semmem export`` writes; a conversation's piece carries ``keyed`` and ``piece``, and is a
  duplicate only of the same piece: same text, session, message and part; a store item's
  piece carries ``keyed`` and ``store``, and is told apart by its key and part).
- Map of records (the user-memory adapter's collection shape): one JSON object whose values are
  objects, e.g. ``{"metric": {"text": "Prefers metric units", "note": "since 2020"}}``. Entries
  are taken in slug order; ``display_field`` names the text field, ``note_field`` the note; the
  slug is kept as the item's ``slug`` field; the hiding flags map to record fields
  (``_flags``: ``status``, ``surfacing``, ``mergedInto``, ``inactive``, ``held``, ``merged``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem import rules
from semmem.conversations.ledgers import checked, is_ledger_line
from semmem.conversations.pieces import PIECE, clean_piece, position
from semmem.errors import InvalidArguments, InvalidInput
from semmem.items import (
    RECORD_FIELDS,
    Item,
    check_ms,
    clean_attrs,
    clean_text,
    dedupe_key,
    now_ms,
    parse_time,
)
from semmem.items.address import KEYED, keyed_fields
from semmem.protocol.jsonio import jsonl_lines
from semmem.store.rows import NEW, ItemRow, Mutation
from semmem.store.views import WriteView
from semmem.stored.fields import STORE, clean_store, store_position

if TYPE_CHECKING:
    from semmem.store.tables import Store

Write = Callable[..., Awaitable[dict[str, Any]]]
Embed = Callable[[list[str]], Awaitable[np.ndarray]]


@dataclass(frozen=True)
class Imported:
    """What one import batch decided: the rows to add and how many were duplicates."""

    rows: list[dict[str, Any]]
    duplicates: int
    hwm: int


def number_imports(view: WriteView, batch: Sequence[dict[str, Any]],
                   texts: Sequence[str], alive: rules.Alive = lambda item: True) -> Imported:
    """Numbers for an import batch: a record's own ``n`` when free, else the next free one;
    texts already in the partition (or earlier in the batch) are skipped, unless the item
    holding one has expired (``alive``)."""
    seen: set[str] = set()
    hwm = view.hwm
    # The view holds the items with the asked-for numbers; numbers above the high-water mark
    # were never assigned.
    taken = {it.n for it in view.items} | set(view.tombstones)
    rows: list[dict[str, Any]] = []
    duplicates = 0
    for i, (rec, text) in enumerate(zip(batch, texts, strict=True)):
        fields = record_fields(rec)
        # A conversation's piece is a duplicate only of the same piece (text and position):
        # one sentence may be said in many messages and sessions.
        where = _position(fields)
        key = dedupe_key(text) if where is None else repr((dedupe_key(text), where))
        same = view.find_text(text)
        if where is not None and (same is None or _position(same.attrs) != where):
            # the piece under the record's own number (the view holds it), if it is that one
            held = view.get(rec["n"]) if isinstance(rec.get("n"), int) else None
            same = held if held is not None and _position(held.attrs) == where \
                and dedupe_key(held.text) == dedupe_key(text) else None
        if (same is not None and alive(same)) or key in seen:
            duplicates += 1
            continue
        seen.add(key)
        want = rec.get("n")
        if isinstance(want, int) and not isinstance(want, bool) and want >= 1 \
                and want not in taken:
            n = want
        else:
            n = hwm + 1
            while n in taken:
                n += 1
        taken.add(n)
        hwm = max(hwm, n)
        rows.append({"i": i, "n": n, "attrs": fields})
    return Imported(rows, duplicates, hwm)


@dataclass(frozen=True)
class ImportReport:
    """Outcome of a bulk import."""

    imported: int
    duplicates: int
    batches: int


async def import_records(
    write: Write, embed: Embed, partition: str, records: Iterable[dict[str, Any]], *,
    batch_size: int = 256, progress: Callable[[int], None] | None = None,
    alive: Callable[[Item], bool] = lambda item: True,
) -> ImportReport:
    """Embed and commit ``records`` in batches through ``write`` (``Memory``'s write), the next
    batch embedded while one commits; commits stay in order, one at a time."""
    totals = {"imported": 0, "duplicates": 0, "batches": 0}

    async def commit(batch: list[dict[str, Any]], texts: list[str], vectors: Any) -> None:
        decided: list[Imported] = []

        def plan(view: WriteView) -> Any:
            got = number_imports(view, batch, texts, alive)
            decided[:] = [got]
            rows = []
            for row in got.rows:
                rec, ts = batch[row["i"]], _ms(batch[row["i"]].get("ts"))
                rows.append(ItemRow(row["n"], texts[row["i"]], vectors[row["i"]], ts,
                                    _ms(rec.get("updated"), ts),
                                    int(rec.get("revision") or 1), attrs=row["attrs"],
                                    created=NEW))
            return Mutation(items=rows, hwm=got.hwm) if rows else {}

        await write(partition, plan, None, texts=texts,
                          numbers=[r.get("n") for r in batch])
        totals["imported"] += len(decided[0].rows)
        totals["duplicates"] += decided[0].duplicates
        totals["batches"] += 1
        if progress is not None:
            progress(len(batch))

    pending: asyncio.Future[None] | None = None
    try:
        for batch in _batches(records, batch_size):
            texts = [clean_text(r.get("text")) for r in batch]
            vectors = await embed(texts)
            if pending is not None:
                await pending
            pending = asyncio.ensure_future(commit(batch, texts, vectors))
        if pending is not None:
            await pending
    finally:
        if pending is not None and not pending.done():
            await asyncio.wait([pending])
    return ImportReport(totals["imported"], totals["duplicates"], totals["batches"])


def _batches(records: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _ms(value: Any, default: int | None = None, what: str = "ts") -> int:
    """A record's time (epoch ms or ISO 8601; none: ``default``, else now), by the one rule
    of times (``items.parse_time``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return check_ms(value, what)
    if isinstance(value, str) and value:
        return parse_time(value, what)
    return default if default is not None else now_ms()


def record_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A record's fields as an item stores them: the owner's record fields and, for a
    conversation's piece, its ``keyed`` address and ``piece`` place (set by ingestion and
    carried by export and import, never set by an edit).

    Raises:
        InvalidArguments: a field that breaks its rules.
    """
    fields = clean_attrs({k: record[k] for k in RECORD_FIELDS if record.get(k) is not None})
    if record.get(KEYED) is not None:
        fields[KEYED] = keyed_fields(record[KEYED])
    if record.get(PIECE) is not None:
        fields[PIECE] = clean_piece(record[PIECE])
    if record.get(STORE) is not None:
        fields[STORE] = clean_store(record[STORE])
    return fields


def _position(attrs: dict[str, Any]) -> tuple[object, ...] | None:
    """A conversation's or a store item's piece position (``None``: a fact)."""
    return position(attrs) or store_position(attrs)


def _check(record: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        clean_text(record.get("text"))
        record_fields(record)
        _ms(record.get("ts"), 0)
        _ms(record.get("updated"), 0, "updated")
    except InvalidArguments as exc:
        raise InvalidInput(f"{where}: {exc.message}") from exc
    return record


def records_from_map(
    data: dict[str, Any], *, display_field: str = "text", note_field: str | None = None,
    source: str = "map",
) -> list[dict[str, Any]]:
    """Records from a slug-keyed map of objects, in slug order."""
    out = []
    for slug in sorted(data):
        entry = data[slug]
        where = f"{source}[{slug!r}]"
        if not isinstance(entry, dict):
            raise InvalidInput(f"{where}: expected an object")
        text = entry.get(display_field)
        if not isinstance(text, str):
            raise InvalidInput(f"{where}: no string field {display_field!r}")
        record: dict[str, Any] = {"text": text, "slug": slug}
        if note_field and entry.get(note_field) is not None:
            record["note"] = entry[note_field]
        record.update(_flags(entry))
        out.append(_check(record, where))
    return out


def _flags(entry: dict[str, Any]) -> dict[str, Any]:
    """A map entry's hiding flags as record fields: ``status`` (any case; stored lower-case),
    ``surfacing``, ``mergedInto``, and the adapter's spellings ``"inactive": true`` (status
    ``inactive``), ``"held": true`` (surfacing ``hold``) and ``"merged": <target>``
    (``mergedInto``). A flag that is false or null hides nothing."""
    fields: dict[str, Any] = {}
    for key in ("status", "surfacing"):
        value = entry.get(key)
        if value is not None:
            fields[key] = value.strip().lower() if isinstance(value, str) else value
    if entry.get("mergedInto") is not None:
        fields["mergedInto"] = entry["mergedInto"]
    if entry.get("inactive") is True:
        fields["status"] = "inactive"
    if entry.get("held") is True:
        fields["surfacing"] = "hold"
    merged = entry.get("merged")
    if merged is not None and merged is not False and "mergedInto" not in fields:
        fields["mergedInto"] = merged
    return fields


def read_records(
    source: Path, *, display_field: str = "text", note_field: str | None = None
) -> list[dict[str, Any]]:
    """Parse a JSONL file or a slug-keyed JSON map (``-`` reads stdin) into records.

    Raises:
        InvalidInput: malformed JSON or a record without a valid text; names the line or slug.
    """
    raw = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
    try:
        whole = json.loads(raw)
    except (ValueError, RecursionError):  # JSONL, or nested too deeply: read line by line
        whole = None
    if isinstance(whole, dict) and whole and all(isinstance(v, dict) for v in whole.values()):
        return records_from_map(whole, display_field=display_field, note_field=note_field,
                                source=str(source))
    records: list[dict[str, Any]] = []
    for lineno, line in jsonl_lines(raw):
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"{source}:{lineno}: not JSON ({exc.args[0]})") from exc
        except RecursionError:
            raise InvalidInput(f"{source}:{lineno}: nested too deeply to read") from None
        if isinstance(record, dict) and is_ledger_line(record):  # an export's ledgers
            records.append(checked(record, f"{source}:{lineno}"))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise InvalidInput(f"{source}:{lineno}: expected an object with a string 'text'")
        records.append(_check(record, f"{source}:{lineno}"))
    return records


async def reembed(store: Store, embed: Embed, names: list[str], batch_size: int,
                  progress: Callable[[int, int], None] | None) -> int:
    """Re-embed every item of the partitions ``names`` with ``embed`` (``reindex``); returns
    how many items were re-embedded."""
    snaps = [await store.snapshot(name) for name in names]
    total, done = sum(s.count for s in snaps), 0
    for snap in snaps:
        vectors: dict[int, np.ndarray] = {}
        for start in range(0, snap.count, batch_size):
            chunk = snap.items[start:start + batch_size]
            embedded = await embed([it.text for it in chunk])
            vectors.update({it.n: vec for it, vec in zip(chunk, embedded, strict=True)})
            done += len(chunk)
            if progress is not None:
                progress(done, total)
        await store.replace_vectors(snap.partition, vectors)
    return done
