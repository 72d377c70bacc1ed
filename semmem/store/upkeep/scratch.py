"""A private temporary directory for the storage engine's spill files.

Lance writes spill files (raw vectors, while it builds an index) under ``$TMPDIR``; a process
killed meanwhile leaves them there, and nobody removes them. Each process of a store gets its
own folder — ``_tmp/<host>-<pid>`` under a local store, or under the user's runtime directory
for a remote one — made 0700, and at start it removes the folders of this host's processes
that are no longer running. The entry points (``serve``, ``mcp``, the CLI) point ``TMPDIR``
at it before the engine runs; no module does at import.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

SCRATCH = "_tmp"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scratch_root(uri: str) -> Path:
    """Where the store's processes on this host keep their temporary folders."""
    if "://" not in uri or uri.startswith("file://"):
        return Path(uri.removeprefix("file://")).resolve() / SCRATCH
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(tempfile.gettempdir(),
                                                             f"semmem-{os.getuid()}")
    return Path(base) / "semmem" / hashlib.sha256(uri.encode()).hexdigest()[:16]


@contextlib.contextmanager
def private_temp(uri: str) -> Iterator[Path]:
    """Within: this process's temporary folder for the store at ``uri`` is ``TMPDIR`` (and
    ``tempfile``'s), the folders dead processes of this host left are removed; after: the
    folder is removed and the previous values come back (a command run in-process, as the
    tests run the CLI, leaves its caller's environment as it was). A server stopped by a
    signal never gets here (uvicorn re-raises it once shut down): the next start removes its
    folder."""
    root = scratch_root(uri)
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    host = socket.gethostname()
    for folder in root.iterdir():
        name, _, pid = folder.name.rpartition("-")
        if name == host and pid.isascii() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
    mine = root / f"{host}-{os.getpid()}"
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir(mode=0o700)
    before_env, before_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = str(mine)
    tempfile.tempdir = str(mine)
    try:
        yield mine
    finally:
        if before_env is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before_env
        tempfile.tempdir = before_dir
        shutil.rmtree(mine, ignore_errors=True)
