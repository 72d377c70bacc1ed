"""Making a table: its first version lands as version 1 of an absent table, or not at all.

LanceDB's ``create_table`` (Lance's create mode) checks that the table is absent, writes the
data, then looks again to commit: a table that another process made in between is
*overwritten*, and Lance rebases that overwrite over every commit since. A write acknowledged
there is lost (two replicas' first writes to one new partition both got number 1; a registry
made twice keeps the later secret). Here the first version is a strict commit (an overwrite of
version 0 with no retries of Lance's): against a table that exists it fails, whatever happened
meanwhile, and this process opens the table that is there.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

import lance
import pyarrow as pa
from lance.dataset import LanceOperation
from lance.fragment import LanceFragment

from semmem.store.files import (
    data_files,
    file_name,
    local_root,
    open_dataset,
    remote,
    sync_files,
    sync_manifest,
)
from semmem.store.upkeep.compaction import Upkeep


def table_uri(db_uri: str, name: str) -> str:
    """Where the store at ``db_uri`` keeps table ``name`` (as LanceDB does: a query, such as
    ``s3+ddb``'s DynamoDB table, stays at the end)."""
    if not remote(db_uri):
        return f"{local_root(db_uri)}/{name}.lance"
    base, query = db_uri.split("?", 1) if "?" in db_uri else (db_uri, "")
    return f"{base.rstrip('/')}/{name}.lance" + (f"?{query}" if query else "")


async def create_table(upkeep: Upkeep, db_uri: str, name: str, data: pa.Table,
                       schema: pa.Schema, *, file_format: str | None) -> bool:
    """Make table ``name`` of the store at ``db_uri`` holding ``data``, unless there is one
    (``make_table``, on a thread); returns whether this call made it. A local store's files
    and manifest are synced to disk; files of a failed commit go to ``upkeep.leftover``."""
    uri = table_uri(db_uri, name)
    return await asyncio.to_thread(
        make_table, uri, data, schema, upkeep.storage_options, file_format=file_format,
        leftover=functools.partial(upkeep.leftover, uri), durable=not remote(uri))


def make_table(uri: str, data: pa.Table, schema: pa.Schema, storage_options: dict[str, str],
               *, file_format: str | None, leftover: Callable[[list[str]], None],
               durable: bool) -> bool:
    """Make the table at ``uri`` holding ``data``, unless there is one; returns whether this
    call made it. ``leftover`` is given this call's data files when its commit failed: they are
    deleted unless a version references them (a commit that landed but whose reply was lost).

    Raises:
        OSError: the store failed (and no table is there).
    """
    options = storage_options or None
    fragment = LanceFragment.create(uri, data, schema=schema, data_storage_version=file_format,
                                    storage_options=options)
    paths = [f.path for f in fragment.files]
    if durable:
        sync_files(uri, paths, [])
    try:
        lance.LanceDataset.commit(uri, LanceOperation.Overwrite(schema, [fragment]),
                                  read_version=0, max_retries=0, storage_options=options,
                                  enable_v2_manifest_paths=True)
    except Exception as failed:
        leftover(paths)
        try:
            open_dataset(uri, storage_options)
        except Exception:
            raise failed from None
        return _first_is_ours(uri, storage_options, paths)
    if durable:
        sync_manifest(uri, 1)
    return True


def _first_is_ours(uri: str, storage_options: dict[str, str], paths: list[str]) -> bool:
    """Whether version 1 of the table at ``uri`` holds these files: the commit landed although
    it failed to the writer (its reply was lost), or another process made the table."""
    try:
        first = open_dataset(uri, storage_options, version=1)
    except Exception:  # cleaned up long since: not made now
        return False
    return bool({file_name(p) for p in paths} & data_files(first))
