"""Index upkeep: a partition's vector index and B-trees built past the threshold, new rows
folded in, segments merged after a purge (``IndexUpkeep``, the index half of ``Upkeep``), and
the index's sizes (lists, probes).

Like the rest of ``Upkeep``, works on a table's URI and storage options: every pass opens the
dataset itself.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from semmem.store.commit.conflicts import is_commit_conflict, retry_conflicts
from semmem.store.files import file_name
from semmem.store.upkeep.filter_indexes import filter_columns, index_kind
from semmem.store.upkeep.orphans import FILE_CACHE_TABLES

log = logging.getLogger("semmem.store")

INDEX_THRESHOLD = 50_000  # rows; see docs/scaling.md for the measurements behind it
VECTOR_INDEX = "vector_idx"
# B-trees past the threshold: the write views' lookups (key, dkey), blank-input recall (updated)
SCALAR_INDEXED = ("key", "dkey", "updated")
# The vector index kind built (docs/scaling.md: IVF with 8-bit scalar-quantised lists is a
# quarter of IVF_FLAT's size, so a million rows' lists fit the 1 GiB index cache, at the same
# recall@10: the candidates are re-ranked on their full vectors). A table whose index is of
# another kind (built by older code) keeps it until its next fold, which builds this kind.
VECTOR_KIND = "IVF_SQ"
# Rows Lance searches exactly beside the index before a pass folds them in: at most
# ``FOLD_ROWS``, or 1 % of the indexed rows when fewer. A fold rewrites the index's lists,
# O(partition): 29 s at 1M, which folding at every pass (every ``compact_every`` writes) spent
# per 32 writes. Unindexed rows cost each search a flat scan: at 1M, +3 ms for 1,000 to 5,000
# of them, +9 ms at 10,000, +14 ms at 20,000 (docs/benchmarks.md, "Index kinds").
FOLD_ROWS = 5_000
FOLD_FRACTION = 0.01


class IndexUpkeep:
    """The index half of ``Upkeep``: what it reads of the dataclass, and the passes on indexes."""

    index_threshold: int
    fold_rows: int
    fold_fraction: float
    _files_lock: threading.Lock
    _merged: dict[str, set[int]]
    _open: Callable[[str], Any]

    def build_index(self, uri: str, purge: bool = False) -> str:
        """Past the threshold: a cosine ``VECTOR_KIND`` index on vectors and B-trees on
        ``SCALAR_INDEXED`` (one missing from a table indexed earlier is added); a later pass
        folds new rows into them once more than ``fold_bound`` rows sit outside the vector
        index and one of them has a vector (else there is nothing to fold: the engine fails on
        it; a first build likewise waits for a row with a vector). Below the bound the rows stay
        where Lance searches them exactly beside the index. A fold of an index of another kind
        builds the vector index again, of ``VECTOR_KIND`` ("built").

        A ``purge`` whose indexes have a segment over a fragment that is gone (a tail a write
        replaced: its rows moved on, but the segment keeps their vectors and keys, forgotten
        ones too) merges every segment into one over the live rows ("merged")."""
        ds = self._open(uri)
        if ds.count_rows() <= self.index_threshold:
            return ""
        indices = ds.describe_indices()
        have = {idx.name for idx in indices}
        if VECTOR_INDEX in have:
            present = {f.fragment_id for f in ds.get_fragments()}
            gone = {f for idx in indices for seg in idx.segments
                    for f in seg.fragment_ids if f not in present}
            # A merge drops the gone fragments' rows but keeps their ids in its coverage: the
            # ids merged away already are remembered (a restart merges once more).
            with self._files_lock:
                merged = self._merged.get(uri, set())
            if purge and gone - merged:
                self._merge_indices(uri, max(len(idx.segments) for idx in indices))
                with self._files_lock:
                    self._merged[uri] = gone
                    while len(self._merged) > FILE_CACHE_TABLES:
                        del self._merged[next(iter(self._merged))]
                return "merged"
            missing = [c for c in (*SCALAR_INDEXED, *filter_columns(ds)) if f"{c}_idx" not in have]
            if missing:  # a table indexed before a column's B-tree was added
                retry_conflicts(lambda: self._scalar_indexes(uri, missing))
            loose = unindexed_rows(ds, indices)
            bound = fold_bound(ds.count_rows() - loose, self.fold_rows, self.fold_fraction)
            if loose <= bound or not unindexed_vectors(ds, indices):
                return ""
            if vector_kind(indices) != VECTOR_KIND:
                retry_conflicts(lambda: self._create_indexes(uri, have - {VECTOR_INDEX}))
                return "built"
            retry_conflicts(lambda: self._open(uri).optimize.optimize_indices())
            return "updated"

        if not unindexed_vectors(ds, indices):
            # Every fact forgotten before the first build: the rows left have no vector, and
            # the engine cannot train on none (as a fold, wait for rows that have one).
            return ""
        retry_conflicts(lambda: self._create_indexes(uri, have))
        return "built"

    def _create_indexes(self, uri: str, keep: set[str]) -> None:
        """Create (or replace) the B-trees of ``SCALAR_INDEXED`` not named in ``keep``, and
        the vector index."""
        d = self._open(uri)
        self._scalar_indexes(uri, [c for c in (*SCALAR_INDEXED, *filter_columns(d))
                                   if f"{c}_idx" not in keep])
        d = self._open(uri)
        # IVF, 5 % of the lists probed, keeps recall@10 ≥ 0.95 at a million rows
        # (docs/benchmarks.md). Rows without a vector are left out.
        d.create_index("vector", VECTOR_KIND, name=VECTOR_INDEX, metric="cosine",
                       num_partitions=index_lists(d.count_rows()), replace=True)

    def _scalar_indexes(self, uri: str, columns: list[str]) -> None:
        d = self._open(uri)
        for column in columns:
            d.create_scalar_index(column, index_kind(column), name=f"{column}_idx", replace=True)

    def _merge_indices(self, uri: str, segments: int) -> None:
        """Merge every segment of every index into one (only live rows are read into it);
        where the engine cannot merge, build the indexes again."""
        try:
            retry_conflicts(lambda: self._open(uri).optimize.optimize_indices(
                num_indices_to_merge=segments))
            return
        except Exception as exc:
            if is_commit_conflict(exc):
                raise
            log.info("merging the indexes of %s failed (%s); building them again",
                     file_name(uri.rstrip("/")), exc)
        retry_conflicts(lambda: self._create_indexes(uri, set()))


def _loose(ds: Any, indices: list[Any]) -> list[Any]:
    """The fragments the vector index does not cover."""
    covered = {f for idx in indices if idx.name == VECTOR_INDEX
               for seg in idx.segments for f in seg.fragment_ids}
    return [f for f in ds.get_fragments() if f.fragment_id not in covered]


def unindexed_rows(ds: Any, indices: list[Any]) -> int:
    """Rows (live, of any kind) in fragments the vector index does not cover, from the
    manifest: no data read."""
    return sum(f.metadata.physical_rows - f.metadata.num_deletions for f in _loose(ds, indices))


def fold_bound(indexed: int, rows: int = FOLD_ROWS, fraction: float = FOLD_FRACTION) -> int:
    """Unindexed rows a pass leaves beside an index over ``indexed`` rows: ``rows``, or
    ``fraction`` of the indexed ones when fewer."""
    return min(rows, int(fraction * indexed))


def vector_kind(indices: list[Any]) -> str:
    """The kind of the vector index ("IVF_FLAT", "IVF_SQ", …; "" when there is none)."""
    return next((str(idx.index_type) for idx in indices if idx.name == VECTOR_INDEX), "")


def unindexed_vectors(ds: Any, indices: list[Any]) -> bool:
    """Whether a row with a vector sits in a fragment the vector index does not cover."""
    loose = _loose(ds, indices)
    if not loose:
        return False
    return bool(ds.scanner(fragments=loose, filter="vector IS NOT NULL", columns=["n"],
                           with_row_id=False).count_rows())


def index_lists(rows: int) -> int:
    """IVF lists for a partition of ``rows`` rows: about √rows, so a list holds about √rows."""
    return max(1, math.isqrt(max(rows, 1)))


def index_probes(rows: int) -> int:
    """Lists searched per query: 5 % of them, at least 24 (recall@10 ≥ 0.95 from 50k to 1M)."""
    return max(24, math.ceil(0.05 * index_lists(rows)))
