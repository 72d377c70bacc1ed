"""Named objects in a directory or under an S3 prefix: where backups are kept.

Local writes go to a temporary name, are flushed to disk and renamed, so an object is either
whole or absent; on S3 a PUT is atomic already.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time

import pyarrow.fs as pafs

from semmem.store.files import filesystem, remote

TEMP = ".tmp-"  # a local object being written: ``<name>.tmp-<random>``, renamed once whole


class Objects:
    """The objects at ``uri`` (a directory, ``file://`` or ``s3://bucket/prefix``)."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None = None) -> None:
        self.uri = uri
        self.local = not remote(uri)
        self.fs, self.root = filesystem(uri, storage_options or {})

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def put(self, name: str, data: bytes) -> None:
        """Write object ``name`` whole (durably, on a local disk)."""
        path = self._path(name)
        if not self.local:
            with self.fs.open_output_stream(path) as out:
                out.write(data)
            return
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        temp = f"{path}{TEMP}{secrets.token_hex(4)}"
        with open(temp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def get(self, name: str) -> bytes:
        """The bytes of object ``name``.

        Raises:
            FileNotFoundError: there is no such object.
        """
        with self.fs.open_input_stream(self._path(name)) as src:
            return bytes(src.read())

    def exists(self, name: str) -> bool:
        """Whether object ``name`` is there."""
        return bool(self.fs.get_file_info(self._path(name)).type == pafs.FileType.File)

    def ages(self, folder: str, *, temporary: bool = False) -> dict[str, float]:
        """The objects directly under ``folder`` with their age in seconds; ``temporary``:
        instead the temporary files a killed ``put`` left (``<name>.tmp-…``)."""
        selector = pafs.FileSelector(self._path(folder), allow_not_found=True)
        now = time.time()
        return {
            info.base_name: now - (info.mtime.timestamp() if info.mtime else now)
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File and (TEMP in info.base_name) == temporary
        }

    def delete(self, name: str) -> None:
        """Remove object ``name`` (gone already is fine)."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self._path(name))
