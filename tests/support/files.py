"""Looking for a text in the files of a data directory that a live server may be changing."""

from __future__ import annotations

from pathlib import Path


def read_if_there(path: Path) -> bytes:
    """The bytes of ``path``, or none when it vanished while we looked (Lance's temp files do)."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return b""


def files_with(root: Path, needle: str | bytes) -> list[Path]:
    """Every file under ``root`` holding ``needle``."""
    raw = needle.encode() if isinstance(needle, str) else needle
    return [p for p in root.rglob("*") if p.is_file() and raw in read_if_there(p)]
