"""Write fences: a commit lands only on the version it decided on, whatever cleanup removed.

Lance checks a commit against the versions it still finds above the commit's read version. A
version cleanup removed is not found, and a commit decided before it was made would land blind
(a number handed out twice, a forgotten text back). So every commit of this store is *fenced*:

- its read version was **confirmed** the latest at a moment ``c`` (a listing of the versions
  taken, or this process's own commit of it: no version above it existed before ``c``), and
- it ends within ``budget`` seconds of ``c`` on this process's monotonic clock.

Every version above the read version was made after ``c`` (by its committer's wall clock, at
most ``skew`` off), and cleanup removes a version only once its timestamp is ``retention`` old
by the cleaner's clock (also at most ``skew`` off). So with ``retention ≥ budget + 2·skew``
(``floor``) no version the commit must be checked against can be gone before it ends. A write
whose confirmation is older than ``fresh`` lists the versions again before committing (one
request); a commit that ended later than the budget anyway (a pause inside the engine's commit)
is checked after the fact: the versions between its read version and its own must all still be
there, or its outcome is reported as uncertain and the partition checked.

Versions this process made itself are removed early only once ``budget`` old by its own clock
(no skew): a writer elsewhere that confirmed the version before them has finished by then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.fs as pafs

from semmem.store.files import filesystem

VERSIONS = "_versions"
_U64 = (1 << 64) - 1


class Stale(Exception):
    """The version a commit was decided on is no longer the latest: decide again."""


@dataclass(frozen=True)
class Fence:
    """How long a commit may take after its read version was confirmed, and the clock skew
    between the store's processes (and its storage) that the store tolerates."""

    skew: float = 1.0
    budget: float = 3.0

    @property
    def fresh(self) -> float:
        """Past this age a confirmation is renewed before committing (a third of the budget:
        the rest is for writing the files and the commit itself)."""
        return self.budget / 3

    @property
    def floor(self) -> float:
        """The least version retention under which fenced commits are never blind."""
        return self.budget + 2 * self.skew

    def retention(self, wanted: timedelta) -> timedelta:
        """``wanted``, raised to the floor."""
        return max(wanted, timedelta(seconds=self.floor))

    def late(self, confirmed: float) -> bool:
        """Whether a commit whose read version was confirmed at ``confirmed`` (monotonic) ends
        outside the budget now."""
        return time.monotonic() - confirmed > self.budget


def version_of(name: str) -> int | None:
    """The version a manifest file name stands for (``N.manifest``, or the reversed names of
    Lance's second naming scheme)."""
    if not name.endswith(".manifest"):
        return None
    stem = name[: -len(".manifest")]
    if not stem.isdigit():
        return None
    n = int(stem)
    return _U64 - n if len(stem) == 20 else n


def listed_versions(uri: str, storage_options: dict[str, str]) -> set[int]:
    """The versions whose manifests exist now (one listing of ``_versions/``)."""
    fs, table = filesystem(uri, storage_options)
    infos = fs.get_file_info(pafs.FileSelector(f"{table}/{VERSIONS}", allow_not_found=True))
    return {v for info in infos if (v := version_of(info.base_name)) is not None}


def gaps(present: set[int], base: int, upto: int) -> list[int]:
    """The versions strictly between ``base`` and ``upto`` that are missing from ``present``."""
    return [v for v in range(base + 1, upto) if v not in present]


def age_s(version: dict[str, Any]) -> float:
    """How old a version of ``LanceDataset.versions()`` is by this clock, in seconds (its
    timestamp is the committer's UTC time, without a zone)."""
    ts = version["timestamp"]
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return float((datetime.now(UTC) - ts).total_seconds())
