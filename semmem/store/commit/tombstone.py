"""Deleting a partition as a commit: its table is *overwritten* with a tombstone, a lone head
row naming no partition, instead of being removed from under its writers.

Removing a table's folder cannot be fenced: a writer (this process's group commit, another
replica's) that decided before the removal writes its data file and manifest into the folder
being removed ("Directory not empty", a manifest pointing at deleted files, the racing commit's
copy of the tail's rows left on disk, a partition broken for everyone). An overwrite is one more
version under the compare-and-swap every write already goes through: Lance refuses any Update
decided on an earlier version once it is there (``CommitConflictError``), so a racing write
discards its files and decides again on the tombstone, i.e. on an empty partition, and lands
after the deletion (its number from 1, as in a new table). Versions keep counting up, so no
process can take the new partition for the old one at an equal version; the old versions and
their files go with the purge that follows (the forget window), as a forgotten text's do.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
from lance.commit import CommitConflictError
from lance.dataset import LanceOperation
from lance.fragment import write_fragments

from semmem.errors import Unavailable
from semmem.store.commit.fence import Fence
from semmem.store.commit.tail import head_rows
from semmem.store.files import open_dataset, sync_files, sync_manifest

GONE = ""  # the head's partition name in a tombstone
MAX_ATTEMPTS = 40


def is_tombstone(ds: Any, limit: int) -> bool:
    """Whether ``ds``'s version is a deleted partition's (a table with no head is buried)."""
    texts = head_rows(ds, ["text"], limit).column("text").to_pylist()
    return bool(texts) and all(t == GONE for t in texts)


def bury(uri: str, storage_options: dict[str, str], schema: pa.Schema, head: pa.Table,
         limit: int, *, fence: Fence, discard: Callable[[list[str]], None],
         leftover: Callable[[list[str]], None], durable: bool) -> bool:
    """Overwrite the table at ``uri`` with ``head`` (a tombstone's lone row) on its latest
    version, again on a newer one after a lost race; returns whether the version it replaced
    held a partition (not a tombstone: then nothing is committed). A commit that ended past
    the fence's budget may have landed over versions a cleanup removed (hidden behind a newer
    one): another tombstone goes on the latest.

    Raises:
        Unavailable: it kept losing races.
        OSError: the store failed.
    """
    existed = False
    for attempt in range(MAX_ATTEMPTS):
        started = time.monotonic()
        ds = open_dataset(uri, storage_options)
        if is_tombstone(ds, limit):
            return existed
        existed = True
        fragments = write_fragments(head, ds, schema=schema)
        paths = [f.files[0].path for f in fragments]
        if durable:
            sync_files(ds.uri, paths, [])
        try:
            new = lance.LanceDataset.commit(ds, LanceOperation.Overwrite(schema, fragments),
                                            read_version=ds.version, max_retries=0)
        except CommitConflictError:  # a write landed first: bury that version instead
            discard(paths)
            time.sleep(min(0.2, 0.002 * (2 ** min(attempt, 6))) * random.random())
            continue
        except BaseException:
            leftover(paths)
            raise
        if durable:
            sync_manifest(ds.uri, new.version)
        if not fence.late(started):
            return existed
    raise Unavailable("too many concurrent writers on this partition to delete it; retry")
