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


def _decoded(path: Path) -> list[bytes]:
    """What Lance's own file reader decodes from a data or index file: each column's values as
    bytes (strings as UTF-8, numbers and vectors as their raw little-endian buffers)."""
    import pyarrow as pa
    from lance.file import LanceFileReader

    try:
        table = LanceFileReader(str(path)).read_all().to_table()
    except Exception:  # not a Lance file (a manifest, a deletion file) or gone meanwhile
        return []
    out: list[bytes] = []

    def walk(array: pa.Array) -> None:
        t = array.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
            out.append(b"\n".join(v.encode() if isinstance(v, str) else v
                                  for v in array.to_pylist() if v is not None))
        elif pa.types.is_fixed_size_list(t) or pa.types.is_list(t) \
                or pa.types.is_large_list(t):
            walk(array.flatten())
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(array.field(i))
        elif pa.types.is_floating(t) or pa.types.is_integer(t):
            out.append(array.to_numpy(zero_copy_only=False).tobytes())

    for column in table.columns:
        walk(column.combine_chunks())
    return out


def decoded_with(root: Path, text: str | None = None, vector: bytes | None = None
                 ) -> list[Path]:
    """Every file under ``root`` that holds ``text`` or ``vector`` (bytes of a float32 vector,
    16 are enough with a dense embedder) raw or once decoded by Lance's file reader: compressed
    string pages hide a text from a byte scan, and a vector is as telling as its text."""
    needles = [n for n in (text.encode() if text else None, vector) if n]
    found = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        raw = read_if_there(p)
        if any(n in raw for n in needles) or any(
                n in blob for blob in _decoded(p) for n in needles):
            found.append(p)
    return found
