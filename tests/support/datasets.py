"""The small labelled set in ``tests/data`` and a writer for the tests' own JSONL files."""

from __future__ import annotations

import json
from pathlib import Path

SMALL_SET = Path(__file__).resolve().parents[1] / "data" / "labelled.jsonl"


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path
