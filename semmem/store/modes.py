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


def check_data_dir(uri: str) -> None:
    """Refuse, in one line that says what semmem needs and what to do, a local data folder
    this user cannot keep a store in: a file, one it may not read, write and enter, or a new
    one whose parent it may not write (the engine's bare ``[Errno 13]`` and ``[Errno 17]``
    lines said neither).

    Raises:
        InvalidInput: the folder cannot hold this user's store.
    """
    path = local_path(uri)
    if path is None:
        return
    fix = "set SEMMEM_DATA (or --data) to a folder this user owns (a new one is made)"
    existing = path
    while True:
        try:
            st = existing.stat()
        except FileNotFoundError:
            if existing == existing.parent:
                return  # nothing to tell: the engine says it
            existing = existing.parent
            continue
        except PermissionError:
            raise InvalidInput(
                f"the data folder {path} is behind a folder this user ({_who()}) may not "
                f"enter: semmem reads, writes and creates files in it; {fix}") from None
        except OSError:
            return  # a link loop, a name too long: the engine's own words
        owner = st.st_uid
        break
    if existing == path and not stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"the data folder {path} is a file, not a folder: semmem keeps its "
                           f"store in a folder of its own; {fix}")
    if existing == path:
        if _may(path, os.R_OK | os.W_OK | os.X_OK):
            return
        raise InvalidInput(
            f"the data folder {path} is not open to this user ({_who()}; it is {_whose(owner)}): "
            f"semmem reads, writes and creates files in it; run semmem as its owner, give "
            f"the folder to this user (`chown`), or {fix}")
    if not _may(existing, os.W_OK | os.X_OK):
        raise InvalidInput(
            f"cannot make the data folder {path}: {existing} is not writable by this user "
            f"({_who()}; it is {_whose(owner)}); make the folder for this user, or {fix}")


def _may(path: Path, mode: int) -> bool:
    """Whether this process (its effective user, as the engine's calls are checked) may."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def _who() -> str:
    uid = os.geteuid()
    with contextlib.suppress(ImportError, KeyError):
        import pwd

        return f"{pwd.getpwuid(uid).pw_name}, uid {uid}"
    return f"uid {uid}"


def _whose(uid: int) -> str:
    with contextlib.suppress(ImportError, KeyError):
        import pwd

        return f"owned by {pwd.getpwuid(uid).pw_name}, uid {uid}"
    return f"owned by uid {uid}"


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
    if st.st_uid == os.geteuid():
        log.warning("the store directory %s is open to other users (mode %o): `chmod 700 %s` "
                    "(new files in it are private anyway)", path, mode, path)
    else:  # the advice is its owner's to follow
        log.warning("the store directory %s is open to other users (mode %o) and %s: its owner "
                    "can `chmod 700 %s` (new files in it are private anyway)",
                    path, mode, _whose(st.st_uid), path)


@contextlib.contextmanager
def owner_only(uri: str, *, default_dir: bool = False) -> Iterator[None]:
    """Within: umask 077, and a local store directory that exists, made 0700 if new or empty
    (one already holding files that others may read is logged, left as its owner set it).

    Raises:
        InvalidInput: ``default_dir`` and the directory is a symbolic link; a folder this
            user cannot keep a store in (``check_data_dir``).
    """
    if default_dir:
        check_default_dir(uri)
    check_data_dir(uri)
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
