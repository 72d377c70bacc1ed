"""Reading import files: JSONL records, or a JSON map of records keyed by slug.

- JSONL: one ``{"text", "n"?, "ts"?, "updated"?, "revision"?, "note"?, "status"?, "surfacing"?,
  "mergedInto"?, "slug"?}`` object per line (what ``semmem export`` writes).
- Map of records (the user-memory adapter's collection shape): one JSON object whose values are
  objects, e.g. ``{"metric": {"text": "Prefers metric units", "note": "since 2020"}}``. Entries
  are taken in slug order; ``display_field`` names the text field, ``note_field`` the note; the
  slug is kept as the item's ``slug`` field; ``status``, ``surfacing`` and ``mergedInto`` are
  kept as they are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from semmem.errors import InvalidArguments, InvalidInput
from semmem.items import RECORD_FIELDS, clean_attrs, clean_text


def _check(record: dict[str, Any], where: str) -> dict[str, Any]:
    try:
        clean_text(record.get("text"))
        clean_attrs({k: record[k] for k in RECORD_FIELDS if record.get(k) is not None})
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
        for key in ("status", "surfacing", "mergedInto"):
            if entry.get(key) is not None:
                record[key] = entry[key]
        out.append(_check(record, where))
    return out


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
    except ValueError:
        whole = None
    if isinstance(whole, dict) and whole and all(isinstance(v, dict) for v in whole.values()):
        return records_from_map(whole, display_field=display_field, note_field=note_field,
                                source=str(source))
    records: list[dict[str, Any]] = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"{source}:{lineno}: not JSON ({exc.args[0]})") from exc
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise InvalidInput(f"{source}:{lineno}: expected an object with a string 'text'")
        records.append(_check(record, f"{source}:{lineno}"))
    return records
