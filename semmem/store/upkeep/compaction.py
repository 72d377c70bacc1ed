"""Table upkeep: prune records, compact, remove old versions; the passes on indexes are
``IndexUpkeep``'s (``store/upkeep/indexes.py``), the sweeps of unreferenced files
``OrphanUpkeep``'s (``store/upkeep/orphans.py``): ``Upkeep`` is the one object of all three.

Works on a table's URI and storage options, never on ``Store``: every pass opens the dataset
itself, so it can run on a worker thread beside the store's readers and writers.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from lance.optimize import Compaction, CompactionOptions

from semmem.items import now_ms
from semmem.store.commit.conflicts import is_commit_conflict, retry_conflicts
from semmem.store.commit.fence import Fence, age_s, gaps, listed_versions
from semmem.store.files import file_name, filesystem, open_dataset, remove_data_files
from semmem.store.rows import KIND_HEAD, KIND_OP
from semmem.store.upkeep.indexes import (
    FOLD_FRACTION,
    FOLD_ROWS,
    INDEX_THRESHOLD,
    IndexUpkeep,
)
from semmem.store.upkeep.orphans import OrphanUpkeep, listed

log = logging.getLogger("semmem.store")

# Fragments this size or larger are left alone by routine compaction (which merges the small
# fragments writes add), and purging a forgotten text rewrites at most one of them.
FRAGMENT_ROWS = 8_192
# A routine pass compacts once writes have sealed this many small fragments besides the tail:
# a cold read costs a request per fragment, and merging K costs about K + 9 requests (measured
# on object storage: docs/scaling.md), so 6 pays for itself after three cold reads.
COMPACT_FRAGMENTS = 6


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance pass did."""

    partition_table: str
    ops_pruned: int
    compacted: bool
    versions_removed: int
    seconds: float
    indexed: str = ""  # "built" / "updated" when the partition is past the index threshold
    orphans_removed: int = 0  # data files no version references, older than ``orphan_age``
    partition: str = ""  # the partition's name, when the store knows it
    next_expiry_ms: int | None = None  # when the earliest idempotency record left expires


@dataclass
class Upkeep(OrphanUpkeep, IndexUpkeep):
    """How tables of one store are kept: retention, orphan age and index threshold."""

    storage_options: dict[str, str] = field(default_factory=dict)
    version_retention: timedelta = timedelta(seconds=10)
    # Data files no version references are deleted once this old: younger ones may belong
    # to a write or compaction (of any process) that has not committed yet.
    orphan_age: timedelta = timedelta(minutes=10)
    # Partitions with more rows than this are read through the vector index, not loaded.
    index_threshold: int = INDEX_THRESHOLD
    # A pass folds unindexed rows into the index once more than ``fold_bound`` of them wait.
    fold_rows: int = FOLD_ROWS
    fold_fraction: float = FOLD_FRACTION
    # The data files each version references, per table: versions never change, so a table's
    # files are read once per version however often a sweep or a lost compaction asks. Keyed
    # by number and time: a table deleted and made again numbers its versions from 1 again.
    _files: dict[str, dict[tuple[int, Any], frozenset[str]]] = field(default_factory=dict,
                                                                     repr=False)
    _files_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    fence: Fence = field(default_factory=Fence)
    # Per table: data files of commits that failed with an unknown outcome and could not be
    # checked and removed then (the store was failing); the next pass tries again.
    _leftovers: dict[str, set[str]] = field(default_factory=dict, repr=False)
    # Per table: data files of versions that went (seen by ``referenced``), for
    # ``_remove_released``.
    _released: dict[str, set[str]] = field(default_factory=dict, repr=False)
    # Per table: fragment ids gone from the dataset whose rows an index merge already dropped.
    _merged: dict[str, set[int]] = field(default_factory=dict, repr=False)

    def _open(self, uri: str) -> Any:
        return open_dataset(uri, self.storage_options)

    def maintain(self, uri: str, retention: timedelta | None = None,
                 purge: bool = True) -> MaintenanceReport:
        """Prune expired op records, compact, index when large, remove versions older than
        ``retention`` and sweep orphaned files. A ``purge`` also rewrites every fragment with
        deleted rows (so a dropped text leaves the data files); a routine pass only merges the
        small fragments writes added."""
        started = time.perf_counter()
        keep = self.version_retention if retention is None else retention
        ds = self._open(uri)
        before = ds.version
        pruned = 0
        compacted = False
        indexed = ""
        failed: Exception | None = None
        # What fails here (a full disk, a failing store) must not stand between a forget and
        # the cleanup that removes its text: cleanup and the sweep run whatever happened,
        # then the failure is reported (the scheduler tries again).
        try:
            expired = f"kind = {KIND_OP} AND op_expires < {now_ms()}"
            if ds.count_rows(filter=expired):
                pruned = retry_conflicts(lambda: self._delete(uri, expired))
                ds = self._open(uri)
            if due(ds.get_fragments(), purge):
                options: CompactionOptions = {
                    "target_rows_per_fragment": FRAGMENT_ROWS, "materialize_deletions": purge,
                    "materialize_deletions_threshold": 0.0 if purge else 0.5,
                }
                compacted = retry_conflicts(lambda: self.compact(uri, options, leave_head=True))
            indexed = self.build_index(uri, purge)
        except Exception as exc:
            failed = exc
            log.warning("maintenance of %s failed (%s); cleaning up all the same",
                        file_name(uri.rstrip("/")), exc)
        if keep < timedelta(seconds=self.fence.floor):
            self._wait_out(uri)  # asked for sooner than the fence allows: wait until it allows
        self._seen(uri)
        stats = self._open(uri).cleanup_old_versions(older_than=self.fence.retention(keep),
                                                     error_if_tagged_old_versions=False)
        removed = int(getattr(stats, "old_versions", 0)) + self._drop_own_versions(uri, before)
        self._remove_released(uri)
        self._remove_leftovers(uri)
        orphans = self.sweep_orphans(uri)
        if failed is not None:
            raise failed
        left = self._open(uri).to_table(columns=["op_expires"], filter=f"kind = {KIND_OP}")
        expiries = [e for e in left.column("op_expires").to_pylist() if e is not None]
        return MaintenanceReport(
            partition_table=file_name(uri.rstrip("/")),
            ops_pruned=pruned,
            compacted=compacted,
            versions_removed=removed,
            seconds=time.perf_counter() - started,
            indexed=indexed,
            orphans_removed=orphans,
            next_expiry_ms=min(expiries) if expiries else None,
        )

    def _wait_out(self, uri: str) -> None:
        """Wait until every version but the latest is as old as the fence's floor, so that a
        cleanup now removes them all without removing one a fenced commit still needs."""
        versions = self._open(uri).versions()
        if len(versions) < 2:
            return
        youngest = min(age_s(v) for v in versions[:-1])
        wait = self.fence.floor - youngest
        if wait > 0:
            time.sleep(min(wait, self.fence.floor))

    def _drop_own_versions(self, uri: str, before: int) -> int:
        """Remove the intermediate versions this pass made (a prune, the fragment reservation
        and the rewrite of a compaction) when the version it started from had already left the
        retention window: they still reference the fragments the compaction replaced, and
        keeping them for their own young age would keep a forgotten text a window longer. So
        one pass after the window purges. (Made during the pass, no reader needs them longer
        than a retry: reads that lose their version read again at the latest.)"""
        ds = self._open(uri)
        versions = ds.versions()
        if any(v["version"] == before for v in versions):
            return 0  # the starting version is within the window: the next pass purges
        # Only once the fence's budget old (by this clock, which made them): a writer that
        # confirmed the version before one of them has committed or given up by then.
        ours = [v["version"] for v in versions if before < v["version"] < ds.version
                and age_s(v) > self.fence.budget]
        if not ours:
            return 0
        stats = ds.cleanup_old_versions(versions=ours, error_if_tagged_old_versions=False)
        return int(getattr(stats, "old_versions", 0))

    def maintain_small(self, uri: str, retention: timedelta | None = None) -> None:
        """Compact a small table whole and remove its old versions (the registry)."""
        retry_conflicts(lambda: self.compact(uri, {
            "materialize_deletions": True, "materialize_deletions_threshold": 0.0}))
        keep = self.version_retention if retention is None else retention
        if keep < timedelta(seconds=self.fence.floor):
            self._wait_out(uri)
        self._seen(uri)
        self._open(uri).cleanup_old_versions(older_than=self.fence.retention(keep),
                                             error_if_tagged_old_versions=False)
        self._remove_released(uri)
        self.sweep_orphans(uri)

    def _delete(self, uri: str, where: str) -> int:
        started = time.monotonic()
        ds = self._open(uri)
        base = ds.version
        before = ds.count_rows(filter=where)
        ds.delete(where)  # the engine's own commit: checked after the fact when it ran late
        if self.fence.late(started):
            self._check_landed(uri, base)
        return int(before)

    def compact(self, uri: str, options: CompactionOptions, leave_head: bool = False) -> bool:
        """Compact a table; returns whether there was anything to do. ``leave_head``: a
        partition table, whose head's fragment is left out (``head_fragment``, decided on the
        version this attempt plans on).

        Lance leaves the rewritten files of a compaction that loses its commit to a concurrent
        write in place for its 7-day GC; they copy live rows, so a text forgotten later would
        stay on disk. They are ours and no version references them: delete them at once.
        """
        ds = self._open(uri)
        if leave_head:
            options = {**options, "excluded_fragment_ids": head_fragment(ds)}
        plan = Compaction.plan(ds, options)
        if not plan.num_tasks():
            return False
        started = time.monotonic()  # ``ds`` was the latest before this: its confirmation
        fence = self.orphan_age.total_seconds() / 2
        rewrites: list[Any] = []
        try:
            for task in plan.tasks:
                rewrites.append(task.execute(ds))
            if fence and time.monotonic() - started > fence:
                # Another replica's sweep may soon take our first files for a killed writer's
                # leftovers and delete them: committing them now could lose the partition.
                self._discard(uri, rewrites, "it took longer than half the orphan age")
                return False
            confirmed = started
            if time.monotonic() - started > self.fence.fresh:
                confirmed = time.monotonic()
                if not self._fenced(uri, ds):
                    self._discard(uri, rewrites, "versions it must be checked against may go")
                    return False
            Compaction.commit(ds, rewrites)
        except BaseException as exc:
            if len(rewrites) < plan.num_tasks() or is_commit_conflict(exc):
                self._discard(uri, rewrites, type(exc).__name__)
            raise
        if self.fence.late(confirmed):
            self._check_landed(uri, ds.version)
        return True

    def _fenced(self, uri: str, ds: Any) -> bool:
        """Whether a commit on ``ds``'s version made now is fenced though time passed since it
        was read: every version above it is still there and young enough that no cleanup can
        remove it within the fence's budget (``store/commit/fence.py``)."""
        versions = {int(v["version"]): v for v in listed(self._open(uri))}
        above = [v for n, v in versions.items() if n > ds.version]
        if gaps(set(versions), ds.version, max(versions) + 1):
            return False
        limit = self.version_retention.total_seconds() - 2 * self.fence.skew - self.fence.budget
        return all(age_s(v) < limit for v in above)

    def _check_landed(self, uri: str, base: int) -> None:
        """After a commit that ended past the fence's budget: every version between its read
        version and the latest must still be there, or it may have landed blind."""
        latest = self._open(uri).version
        missing = gaps(listed_versions(uri, self.storage_options), base, latest)
        if missing:
            log.error("a maintenance commit of %s landed over removed versions %s; run "
                      "`semmem check --repair`", file_name(uri.rstrip("/")), missing)

    def _discard(self, uri: str, rewrites: list[Any], why: str) -> None:
        """Delete the files of compaction rewrites that did not commit, once verified that no
        version references them (never trusting an error message alone)."""
        names = {file_name(f.path) for r in rewrites for frag in r.new_fragments
                 for f in frag.data_files()}
        if not names:
            return
        try:
            names -= self.referenced(uri)
            fs, table = filesystem(uri, self.storage_options)
            removed = remove_data_files(fs, table, names)
            log.info("compaction did not commit (%s); removed its %d file(s)", why, removed)
        except Exception:  # the sweep of unreferenced files will get them later
            log.warning("could not remove the files of an uncommitted compaction", exc_info=True)


def due(fragments: list[Any], purge: bool) -> bool:
    """Whether a pass compacts: a purge whenever a fragment has deleted rows or small ones can
    merge; a routine pass once ``COMPACT_FRAGMENTS`` small fragments wait beside the tail, or a
    fragment is half deleted."""
    metas = [f.metadata for f in fragments]
    if purge:
        return len(metas) > 1 or any(m.num_deletions for m in metas)
    small = sum(1 for m in metas if m.physical_rows < FRAGMENT_ROWS)
    return small > COMPACT_FRAGMENTS or any(2 * m.num_deletions >= m.physical_rows > 0
                                            for m in metas)


def head_fragment(ds: Any) -> list[int]:
    """The fragment holding the partition's head row, when it has no deleted rows: every write
    moves the head (it deletes the old row and adds a new one), so a compaction that rewrote
    its fragment would lose its commit to the next write. Left out, a stream of writes and a
    compaction commit side by side. (A fragment with deleted rows is never left out, so a
    purge still rewrites every fragment that holds a dropped text.)"""
    try:
        rows = ds.to_table(columns=[], filter=f"kind = {KIND_HEAD}", with_row_address=True)
    except (OSError, ValueError):
        return []
    ids = {int(a) >> 32 for a in rows.column("_rowaddr").to_pylist()}
    return [f.fragment_id for f in ds.get_fragments()
            if f.fragment_id in ids and not f.metadata.num_deletions]
