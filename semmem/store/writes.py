"""The compare-and-swap write: decide on a write view of one version, commit against that
same version with no retries of Lance's own, start again on the latest after a lost race."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from semmem.errors import DeadlineExceeded, ModelMismatch, SemmemError, Unavailable
from semmem.items import now_ms
from semmem.store.conflicts import backoff, is_commit_conflict, moved_on
from semmem.store.files import open_dataset
from semmem.store.reading import decode
from semmem.store.schema import LIVE_ITEMS, Lookup, Mutation, mutation_rows
from semmem.store.views import WriteView

MAX_WRITE_ATTEMPTS = 40
Plan = Callable[[WriteView], Mutation | dict[str, Any]]


@dataclass(frozen=True)
class Writer:
    """Commits writes to the tables of one store (one model, one schema)."""

    model_id: str
    schema: pa.Schema
    storage_options: dict[str, str]

    @property
    def dim(self) -> int:
        """The vector width of the schema."""
        width: int = self.schema.field("vector").type.list_size
        return width

    async def write(self, tbl: Any, partition: str, plan: Plan, lookup: Lookup,
                    deadline_ms: int | None) -> dict[str, Any]:
        """Apply one write to ``tbl`` atomically, retrying on concurrent commits (the caller
        holds the partition's lock, so only other processes race it)."""
        uri = await tbl.uri()
        for attempt in range(MAX_WRITE_ATTEMPTS):
            version = await tbl.version()
            try:
                ds, view = await asyncio.to_thread(self.view, uri, partition, version, lookup)
            except SemmemError:
                raise
            except Exception as exc:
                if not await moved_on(tbl, version):
                    raise Unavailable(f"cannot read partition: {exc}") from exc
                await backoff(attempt)
                continue
            decision = plan(view)
            if not isinstance(decision, Mutation):
                return decision
            if view.head.model is not None and view.head.model != self.model_id:
                raise ModelMismatch(
                    f"partition was embedded with {view.head.model!r}; run `semmem reindex`"
                )
            if deadline_ms is not None and now_ms() >= deadline_ms:
                raise DeadlineExceeded("deadline passed before the write was committed")
            rows = mutation_rows(view.head, decision, self.model_id).table(self.schema)
            try:
                await asyncio.to_thread(_cas_merge, ds, rows)
            except OSError as exc:
                if not is_commit_conflict(exc) and not await moved_on(tbl, version):
                    raise Unavailable(f"write failed: {exc}") from exc
                await backoff(attempt)
                await tbl.checkout_latest()
                continue
            await tbl.checkout_latest()
            return decision.result
        raise Unavailable("too many concurrent writers on this partition; retry")

    def view(self, uri: str, partition: str, version: int,
             lookup: Lookup) -> tuple[Any, WriteView]:
        """The write view of ``partition`` at ``version`` and the dataset to commit against."""
        ds = open_dataset(uri, self.storage_options, version)
        d = decode(partition, version, ds.to_table(filter=lookup.where()), self.dim)
        live = ds.count_rows(filter=LIVE_ITEMS)
        return ds, WriteView(d.items, d.vectors, d.head, live, d.tombstones, d.ops)


def _cas_merge(ds: Any, rows: pa.Table) -> None:
    # ``ds`` is opened at the version the decision was computed on. Lance's own retries would
    # re-run the merge on top of a concurrent commit and silently overwrite it; with none, a
    # concurrent head update makes this commit fail instead.
    (
        ds.merge_insert("key")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .conflict_retries(0)
        .execute(rows)
    )
