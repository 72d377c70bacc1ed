"""Reading import files: JSONL records, one ``{"text", "n"?, "ts"?, …}`` object per line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from semmem.errors import InvalidInput


def read_records(source: Path) -> list[dict[str, Any]]:
    """Parse a JSONL file (``-`` for stdin) into records.

    Raises:
        InvalidInput: a line is not a JSON object with a string ``text``; names the line.
    """
    raw = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
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
        records.append(record)
    return records
