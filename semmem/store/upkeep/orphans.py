"""The files of a table that no version references, found and removed: a failed write's
(``leftover``), a removed version's (``_remove_released``), orphans past their age
(``sweep_orphans``), unfinished uploads; ``OrphanUpkeep`` is this half of ``Upkeep``.

Like the rest of ``Upkeep``, works on a table's URI and storage options: every pass opens the
dataset itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from semmem.store.commit.fence import Fence
from semmem.store.files import (
    data_files,
    file_name,
    filesystem,
    remove_data_files,
    stale_data_files,
)
from semmem.store.upkeep.uploads import abort_unfinished

log = logging.getLogger("semmem.store")

FILE_CACHE_TABLES = 256  # tables whose per-version file lists ``Upkeep`` keeps


class OrphanUpkeep:
    """The files half of ``Upkeep``: what it reads of the dataclass, and the passes on files."""

    storage_options: dict[str, str]
    orphan_age: timedelta
    fence: Fence
    _files: dict[str, dict[tuple[int, Any], frozenset[str]]]
    _files_lock: threading.Lock
    _leftovers: dict[str, set[str]]
    _released: dict[str, set[str]]
    _open: Callable[[str], Any]

    def leftover(self, uri: str, names: list[str]) -> None:
        """The data files of a commit that failed with an unknown outcome: deleted unless a
        version references them (it landed); when that cannot be told now, the next pass
        tries again — they copy live rows, which a later forget must not leave on disk."""
        if not names:
            return
        with self._files_lock:
            self._leftovers.setdefault(uri, set()).update(file_name(n) for n in names)
        self._remove_leftovers(uri)

    def _remove_leftovers(self, uri: str) -> None:
        with self._files_lock:
            names = self._leftovers.pop(uri, set())
        if not names:
            return
        try:
            unreferenced = names - self.referenced(uri)
            fs, table = filesystem(uri, self.storage_options)
            removed = remove_data_files(fs, table, unreferenced)
            if removed:
                log.info("removed %d file(s) of a write that did not commit", removed)
        except Exception:
            with self._files_lock:
                self._leftovers.setdefault(uri, set()).update(names)
            log.warning("could not remove the files of a failed write yet; will retry")

    def _seen(self, uri: str) -> None:
        """Note the files of every version there is now, before a cleanup removes some."""
        try:
            self.referenced(uri)
        except Exception:  # then what this cleanup releases waits for the orphan sweep
            log.warning("cannot list the versions of %s before its cleanup",
                        file_name(uri.rstrip("/")))

    def _remove_released(self, uri: str) -> None:
        """Delete the data files of removed versions that no version left references.

        Lance's cleanup keeps a removed version's files while their times are younger than its
        cutoff, as files a write may still be making; but a file written by a process whose
        clock runs ahead (or by a store whose clock does) is young by this clock for a while
        after its versions went, and no later cleanup looks at it again: a forgotten text would
        wait for the orphan sweep (``orphan_age``). A file a committed version referenced is
        no write's work in progress, and no commit can reference it again once the latest
        version does not (a commit made on an older version conflicts with the one that
        dropped it), so it goes now."""
        try:
            left = self.referenced(uri)
            with self._files_lock:
                names = self._released.pop(uri, set()) - left
            if not names:
                return
            fs, table = filesystem(uri, self.storage_options)
            removed = remove_data_files(fs, table, names)
        except Exception:  # the orphan sweep gets them later
            log.warning("cannot remove the files of the removed versions of %s",
                        file_name(uri.rstrip("/")))
            return
        if removed:
            log.info("removed %d file(s) of removed versions of table %s", removed,
                     file_name(table))

    def discard_files(self, uri: str, names: list[str]) -> None:
        """Delete data files of the table that are known to be unreferenced (a write that lost
        its commit); best effort: the orphan sweep gets what is left."""
        try:
            fs, table = filesystem(uri, self.storage_options)
            remove_data_files(fs, table, (file_name(n) for n in names))
        except Exception:
            log.warning("could not remove the files of an uncommitted write", exc_info=True)

    def referenced(self, uri: str) -> set[str]:
        """Names of the data files any version of the table references."""
        ds = self._open(uri)
        with self._files_lock:
            known = self._files.pop(uri, {})
        current: dict[tuple[int, Any], frozenset[str]] = {}
        for version in listed(ds):  # any version a reader may still check out
            v = (int(version["version"]), version.get("timestamp"))
            if v in known:
                current[v] = known[v]
                continue
            try:
                current[v] = frozenset(data_files(ds.checkout_version(v[0])))
            except (OSError, ValueError):  # removed by a concurrent cleanup meanwhile
                continue
        gone = [files for v, files in known.items() if v not in current]
        with self._files_lock:
            if gone:  # what they held and no version left holds: ``_remove_released``
                kept = set().union(*current.values())
                self._released.setdefault(uri, set()).update(set().union(*gone) - kept)
            self._files[uri] = current  # versions cleaned up since are forgotten with them
            while len(self._files) > FILE_CACHE_TABLES:  # the least recently asked go first
                del self._files[next(iter(self._files))]
        return set().union(*current.values())

    def sweep_orphans(self, uri: str) -> int:
        """Delete data files that no version of the table references and that are older than
        ``orphan_age`` (left by a process killed mid-write or mid-compaction). Best effort: a
        store whose files cannot be listed here keeps them for Lance's own 7-day cleanup.
        On S3 it also aborts the table's unfinished multipart uploads as old."""
        self.abort_uploads(uri, self.orphan_age + timedelta(seconds=self.fence.skew))
        try:
            fs, table = filesystem(uri, self.storage_options)
            # The files' times are the storage's clock: a skewed one must not make them old.
            stale = stale_data_files(fs, table,
                                     self.orphan_age + timedelta(seconds=self.fence.skew))
            if not stale:
                return 0
            stale -= self.referenced(uri)
            removed = remove_data_files(fs, table, stale)
        except Exception:
            log.warning("cannot sweep unreferenced files of %s", file_name(uri),
                        exc_info=True)
            return 0
        if removed:
            log.info("removed %d unreferenced data file(s) of table %s", removed,
                     file_name(table))
        return removed

    def abort_uploads(self, uri: str, older_than: timedelta) -> int:
        """Abort the table's unfinished multipart uploads on S3 older than ``older_than``
        (they hold rows a killed upload sent: ``store/upkeep/uploads.py``); best effort."""
        try:
            aborted = abort_unfinished(uri, self.storage_options, older_than)
        except Exception:
            log.warning("cannot abort unfinished uploads of %s", file_name(uri.rstrip("/")),
                        exc_info=True)
            return 0
        if aborted:
            log.info("aborted %d unfinished upload(s) of table %s", aborted,
                     file_name(uri.rstrip("/")))
        return aborted or 0


def listed(ds: Any, attempts: int = 3) -> list[dict[str, Any]]:
    """The table's versions; listed again when one listed went before its manifest was read
    (another process's cleanup removed it meanwhile: "Not found")."""
    for attempt in range(attempts):
        try:
            return list(ds.versions())
        except (OSError, ValueError) as exc:
            if attempt == attempts - 1 or "not found" not in str(exc).lower():
                raise
    raise AssertionError("unreachable")
