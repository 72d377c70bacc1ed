"""Looking for a text in the files of a data directory that a live server may be changing."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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


def _decoded(path: Path) -> tuple[list[bytes], list[Any]]:
    """What Lance's own file reader decodes from a data or index file: each string column's
    values as UTF-8 bytes, and each float vector column as a matrix (an index keeps vectors
    normalised, so their bytes differ from the row's by rounding)."""
    import numpy as np
    import pyarrow as pa
    from lance.file import LanceFileReader

    if path.suffix not in (".lance", ".idx"):  # manifests, transactions, deletion files
        return [], []
    try:
        table = LanceFileReader(str(path)).read_all().to_table()
    except BaseException as exc:  # the reader panics on a file still being written
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return [], []
    texts: list[bytes] = []
    vectors: list[Any] = []

    def walk(array: pa.Array) -> None:
        t = array.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
            texts.append(b"\n".join(v.encode() if isinstance(v, str) else v
                                     for v in array.to_pylist() if v is not None))
        elif pa.types.is_fixed_size_list(t) and pa.types.is_floating(t.value_type):
            flat = array.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
            vectors.append(flat.reshape(-1, t.list_size))
        elif pa.types.is_fixed_size_list(t) and pa.types.is_uint8(t.value_type):
            # scalar-quantised vectors (an IVF_SQ index's codes): an affine map of each
            # component to 0–255, so centred they point where the vector does
            flat = array.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
            codes = flat.reshape(-1, t.list_size)
            vectors.append(codes - codes.mean(axis=1, keepdims=True))
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(array.flatten())
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(array.field(i))

    for column in table.columns:
        walk(column.combine_chunks())
    return texts, vectors


def decoded_texts(path: Path) -> list[bytes]:
    """The string columns of a Lance data or index file, decoded (none for other files)."""
    return _decoded(path)[0]


def decoded_with(root: Path, text: str | None = None, vector: Any = None) -> list[Path]:
    """Every file under ``root`` that holds ``text`` (raw, or once Lance's file reader decoded
    it: compressed string pages hide a text from a byte scan) or ``vector`` (a float32 array:
    its raw bytes, or a decoded vector at cosine ≥ 0.9999, or 8-bit codes of it at ≥ 0.999
    once both are centred — a vector is as telling as its text)."""
    import numpy as np

    needle = text.encode() if text else None
    unit = centred = None
    if vector is not None:
        unit = np.asarray(vector, np.float32)
        unit = unit / (np.linalg.norm(unit) or 1.0)
        centred = (unit - unit.mean()) / (np.linalg.norm(unit - unit.mean()) or 1.0)
    found = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        raw = read_if_there(p)
        if (needle and needle in raw) or (vector is not None and
                                          np.asarray(vector, np.float32).tobytes() in raw):
            found.append(p)
            continue
        texts, matrices = _decoded(p)
        if (needle and any(needle in blob for blob in texts)) or (unit is not None and any(
                m.shape[1] == unit.shape[0] and len(m) and (float(np.max(
                    m @ unit / np.maximum(np.linalg.norm(m, axis=1), 1e-12))) >= 0.9999
                    or float(np.max(m @ centred / np.maximum(np.linalg.norm(m, axis=1), 1e-12)))
                    >= 0.999)
                for m in matrices)):
            found.append(p)
    return found


def decoded_hits(root: Path, texts: list[str], vectors: Any = None,
                 by_text: Any = None) -> set[int]:
    """Which of ``texts`` (by index) some file under ``root`` still holds, raw or decoded, or
    holds the vector of (``vectors``: one row per text, as ``decoded_with`` finds one; not
    looked for where ``by_text``, a mask per text, is true): every file read and decoded
    once, for many texts at a time (the soak's final scan)."""
    import numpy as np

    needles = [t.encode() for t in texts]
    units = centred = None
    if vectors is not None and len(texts):
        units = np.asarray(vectors, np.float32)
        units = units / np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-12)
        shifted = units - units.mean(axis=1, keepdims=True)
        centred = shifted / np.maximum(np.linalg.norm(shifted, axis=1, keepdims=True), 1e-12)
    looked = np.ones(len(texts), bool) if by_text is None else ~np.asarray(by_text, bool)
    found: set[int] = set()
    for p in root.rglob("*"):
        if not p.is_file() or len(found) == len(texts):
            continue
        raw = read_if_there(p)
        blobs, matrices = _decoded(p)
        blob = b"\n".join([raw, *blobs])
        found.update(i for i, n in enumerate(needles) if i not in found and n in blob)
        if units is None or centred is None:
            continue
        for i in range(len(units)):
            if looked[i] and i not in found and \
                    np.asarray(vectors[i], np.float32).tobytes() in raw:
                found.add(i)
        for m in matrices:
            if m.shape[1] != units.shape[1] or not len(m):
                continue
            norm = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
            near = np.maximum((norm @ units.T).max(axis=0) >= 0.9999,
                              (norm @ centred.T).max(axis=0) >= 0.999)
            found.update(int(i) for i in np.flatnonzero(near & looked))
    return found
