"""Store files for their owner only: the process umask is 077 while an entry point runs, so
every directory and file the store (and the engine, which follows the umask) creates is 0700
or 0600; a new local store directory is made 0700. Fact texts are personal data: under the
usual 022 they would be world-readable.

The default data directory is relative (``./semmem-data``): a symbolic link planted there
beforehand would send the store wherever its maker chose, so it is refused; a directory named
explicitly (``SEMMEM_DATA``, ``--data``) may be a link, since the operator chose it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from semmem.errors import InvalidInput

log = logging.getLogger("semmem.store")
PRIVATE_UMASK = 0o077


def local_path(uri: str) -> Path | None:
    """The directory of a local store URI, ``None`` for object storage."""
    if "://" not in uri:
        return Path(uri)
    return Path(uri.removeprefix("file://")) if uri.startswith("file://") else None


def check_default_dir(uri: str) -> None:
    """Refuse a default (relative) data directory that is a symbolic link.

    Raises:
        InvalidInput: it is one; the message says where it points.
    """
    path = local_path(uri)
    if path is not None and path.is_symlink():
        raise InvalidInput(
            f"the default data directory {path} is a symbolic link (to {os.readlink(path)}); "
            f"refusing to follow a link planted there: set SEMMEM_DATA (or --data) to the "
            f"directory you mean")


def _private_dir(path: Path) -> None:
    """The rule for a store directory that was already there: private to its owner. An empty
    one of this user (made by hand for the store: `mkdir`, 0755) is made 0700, as semmem makes
    its own; one holding files others may read is left as its owner set it, said in one line
    with the fix."""
    st = path.stat()
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077:
        return
    if st.st_uid == os.geteuid() and stat.S_ISDIR(st.st_mode) and not any(path.iterdir()):
        path.chmod(0o700)
        return
    log.warning("the store directory %s is open to other users (mode %o): `chmod 700 %s` "
                "(new files in it are private anyway)", path, mode, path)


@contextlib.contextmanager
def owner_only(uri: str, *, default_dir: bool = False) -> Iterator[None]:
    """Within: umask 077, and a local store directory that exists, made 0700 if new or empty
    (one already holding files that others may read is logged, left as its owner set it).

    Raises:
        InvalidInput: ``default_dir`` and the directory is a symbolic link.
    """
    if default_dir:
        check_default_dir(uri)
    before = os.umask(PRIVATE_UMASK)
    try:
        path = local_path(uri)
        if path is not None:
            try:  # no look first: another replica starting beside this one may make it now
                path.mkdir(parents=True, mode=0o700)
            except FileExistsError:
                _private_dir(path)
        yield
    finally:
        os.umask(before)
