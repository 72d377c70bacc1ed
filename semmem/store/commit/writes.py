"""The compare-and-swap write, with group commit.

Writes to one partition queue behind the commit in flight and go together in the next one:
each decides in turn on one write view (a later one sees what the earlier ones decided), and
their rows commit as one rolling-tail update (``store/commit/tail.py``) against the version the view
was read at, with no retries of Lance's own. A write decides on the latest version this process
holds, and commits on it only while it is *fenced* (``store/commit/fence.py``): confirmed the latest
recently — by this process's own commit or a listing — or confirmed again just before the
commit; a lost race (another process or replica committed first) plans the whole group again on
the latest version. A group that commits nothing (replays, refusals) is answered only once that
version is known to be the latest. Each write keeps its own result or refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from semmem import tracing
from semmem.errors import DeadlineExceeded, ModelMismatch, SemmemError, Unavailable
from semmem.items import now_ms
from semmem.store.commit.conflicts import backoff, is_commit_conflict, moved_on
from semmem.store.commit.fence import Fence, Stale, gaps, listed_versions
from semmem.store.commit.group import after, joined
from semmem.store.commit.quota import Quota
from semmem.store.commit.tail import Layout, commit, tail_limit
from semmem.store.handles import table_uri
from semmem.store.rows import Lookup, Mutation, Plan, table_name
from semmem.store.schema import Batch
from semmem.store.views import WriteView

log = logging.getLogger("semmem.store")

MAX_WRITE_ATTEMPTS = 40
MAX_GROUP = 64  # writes per commit: bounds one commit's size and one view's lookups
# A group waits this long after its first write arrived for the others of the same turn (the
# parallel tool calls of one model turn arrive within a few milliseconds), and for the writes
# still being embedded, at most ``MAX_GATHER_S`` in all.
GATHER_S = 0.006
MAX_GATHER_S = 0.05
ViewReader = Callable[[str, Any, int, Lookup], Awaitable[tuple[Any, WriteView, Layout]]]
Committed = Callable[[str, Batch, Any, Layout | None], Callable[[], Awaitable[None]] | None]
Known = Callable[[str], int | None]
Latest = Callable[[str, Any], Awaitable[int]]  # a partition's latest version (its table given)
Discard = Callable[[str, list[str]], None]  # a table's URI, names of its data files


@dataclass
class Pending:
    """One write waiting for its group's commit."""

    plan: Plan
    lookup: Lookup
    deadline_ms: int | None
    future: asyncio.Future[dict[str, Any]]


@dataclass
class _Queue:
    loop: asyncio.AbstractEventLoop
    pending: list[Pending] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)  # a coming write got here


class Writer:
    """Commits the writes of one store, one group per partition at a time."""

    def __init__(self, model_id: str, schema: pa.Schema, read_view: ViewReader,
                 committed: Committed, known: Known, discard: Discard, latest: Latest, *,
                 tail_rows: int | None = None, refresh: bool = False,
                 fence: Fence | None = None, leftover: Discard | None = None,
                 suspect: Callable[[str], Awaitable[None]] | None = None,
                 storage_options: dict[str, str] | None = None, durable: bool = False,
                 confirms: bool = True,
                 confirmed: dict[str, tuple[int, float]] | None = None,
                 quota: Quota | None = None,
                 reborn: Callable[[str], Awaitable[None]] | None = None) -> None:
        self.model_id = model_id
        self.schema = schema
        self.tail_rows = tail_rows or tail_limit(schema.field("vector").type.list_size)
        self.read_view = read_view
        self.committed = committed
        self.known = known
        self.discard = discard
        self.latest = latest
        # Move the table handle to each new version (a handle that checks for newer versions
        # only now and then would not see this process's own write).
        self.refresh = refresh
        self.fence = fence or Fence()
        self.leftover = leftover or discard
        self.suspect = suspect or _no_check
        self.storage_options = storage_options or {}
        self.durable = durable  # a local store: sync files before acknowledging
        self.confirms = confirms  # ``latest`` lists the versions (else it may lag)
        # Per partition: the version this process last confirmed the latest, and when
        # (monotonic): a write decided on it commits without asking while that is recent.
        self._confirmed: dict[str, tuple[int, float]] = {} if confirmed is None else confirmed
        self.quota = quota or Quota()
        # Told of a write about to commit on a deleted partition's tombstone: its name goes
        # back into the registry first (``Connection.drop`` removed it).
        self.reborn = reborn or _no_check
        self._queues: dict[str, _Queue] = {}
        self._coming: dict[str, int] = {}  # writes announced and not yet queued, per partition
        self._first: dict[str, float] = {}  # when the first of them arrived (monotonic)
        self.groups = 0  # commits made (for tests and metrics)

    @contextlib.contextmanager
    def coming(self, partition: str) -> Iterator[None]:
        """Announce a write to ``partition`` while its text is being embedded: the group it
        belongs to waits for it instead of committing without it."""
        now = asyncio.get_running_loop().time()
        first = self._first.get(partition)
        if first is None or now - first > MAX_GATHER_S:  # older: left by a write never queued
            self._first[partition] = now
        self._coming[partition] = self._coming.get(partition, 0) + 1
        failed = True
        try:
            yield
            failed = False
        finally:
            left = self._coming[partition] - 1
            if left:
                self._coming[partition] = left
            else:
                del self._coming[partition]
            queue = self._queues.get(partition)
            if queue is not None:
                queue.arrived.set()
            elif failed and not left:
                self._first.pop(partition, None)  # nothing of this turn will be queued

    async def _gather(self, partition: str, queue: _Queue) -> None:
        """Wait for the writes of this turn: until ``GATHER_S`` after the first announced one
        arrived and none is still being embedded (at most ``MAX_GATHER_S``). A group with no
        announced write (a forget, a merge) goes at once."""
        first = self._first.get(partition)
        if first is None or len(queue.pending) >= MAX_GROUP:
            return
        loop = queue.loop
        until = first + GATHER_S
        cap = loop.time() + MAX_GATHER_S
        while True:
            now = loop.time()
            busy = self._coming.get(partition, 0) > 0
            if now >= cap or (not busy and now >= until):
                break
            queue.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(queue.arrived.wait(),
                                       (cap if busy else until) - now)
        if not self._coming.get(partition):
            self._first.pop(partition, None)

    async def write(self, tbl: Any, partition: str, plan: Plan, lookup: Lookup,
                    deadline_ms: int | None) -> dict[str, Any]:
        """Queue one write and wait for its group's commit."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(partition)
        if queue is None or queue.loop is not loop:
            if queue is not None and queue.task is not None and not queue.task.done() \
                    and not queue.loop.is_closed():
                raise Unavailable("the partition is being written from another event loop")
            queue = self._queues[partition] = _Queue(loop)
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        queue.pending.append(Pending(plan, lookup, deadline_ms, future))
        if queue.task is None or queue.task.done():
            queue.task = loop.create_task(self._drain(tbl, partition, queue))
            queue.task.add_done_callback(functools.partial(self._stopped, partition, queue))
        return await future

    def _stopped(self, partition: str, queue: _Queue, task: asyncio.Task[None]) -> None:
        """A drain cancelled before it ran (a shutdown right after a write queued) never
        reaches its own clean-up: refuse what it held, as it would have."""
        if not task.cancelled():
            return
        for p in queue.pending:
            if not p.future.done():
                p.future.set_exception(Unavailable("the write was interrupted"))
        queue.pending.clear()
        if self._queues.get(partition) is queue:
            del self._queues[partition]

    async def _drain(self, tbl: Any, partition: str, queue: _Queue) -> None:
        try:
            while queue.pending:
                await self._gather(partition, queue)
                group = queue.pending[:MAX_GROUP]
                del queue.pending[:MAX_GROUP]
                try:
                    await self._commit(tbl, partition, group)
                except BaseException as exc:  # the store failed: the group's writes hear it
                    for p in group:
                        if not p.future.done():
                            p.future.set_exception(exc if isinstance(exc, Exception) else
                                                   Unavailable("the write was interrupted"))
                    if not isinstance(exc, Exception):
                        raise
        except BaseException:  # interrupted (shutdown): nobody will commit what still waits
            for p in queue.pending:
                if not p.future.done():
                    p.future.set_exception(Unavailable("the write was interrupted"))
            queue.pending.clear()
            raise
        finally:
            if self._queues.get(partition) is queue:
                del self._queues[partition]

    async def _commit(self, tbl: Any, partition: str, group: list[Pending]) -> None:
        fresh = False  # whether ``version`` was just read from the store
        uncertain = False  # whether an earlier attempt's commit may have landed
        for attempt in range(MAX_WRITE_ATTEMPTS):
            group = _in_time(group, uncertain)
            if not group:
                return
            known = self.known(partition) if attempt == 0 else None
            fresh = known is None
            held = self._confirmed.get(partition)
            confirmed = held[1] if held is not None and held[0] == known else None
            asked = time.monotonic()
            version = await self.latest(partition, tbl) if known is None else known
            if known is None and self.confirms:
                confirmed = asked  # listed: nothing above ``version`` existed before ``asked``
            try:
                with tracing.span("semmem.write_view"):
                    ds, view, layout = await self.read_view(partition, tbl, version,
                                                            joined([p.lookup for p in group]))
            except SemmemError:
                raise
            except Exception as exc:
                if not await moved_on(tbl, version):
                    raise Unavailable(f"cannot read partition: {exc}") from exc
                await backoff(attempt)
                continue
            if view.model is not None and view.model != self.model_id:
                raise ModelMismatch.between("partition", view.model, self.model_id)
            outcomes, mutations, decided = self._decide(group, view)
            if not mutations:
                if not fresh and await self.latest(partition, tbl) != version:
                    continue  # decided on a version that is no longer the latest
                _settle(outcomes)
                return
            if _past(p for p, _ in mutations):
                continue  # refused by the next round's deadline check; decide again without it
            if view.head.gone:
                await self.reborn(partition)
            # The head row carries the counts on: known from the decision, no count read.
            batch = Batch.of(view.head, [m for _, m in mutations], live=decided.live,
                             expiring=decided.expiring, application=decided.application)
            rows = batch.rows(self.model_id).table(self.schema)
            uri = await table_uri(tbl)
            gate = _Gate(self.fence, ds, confirmed, [p for p, _ in mutations])
            try:
                # The span is the group's, under the request of the write that started it.
                with tracing.span("semmem.commit") as span:
                    span.set("semmem.commit.group_size", len(mutations))
                    span.set("semmem.commit.attempt", attempt + 1)
                    new, layout_now = await asyncio.to_thread(
                        commit, ds, layout, rows, self.schema, self.tail_rows, view.hwm,
                        functools.partial(self.discard, uri), gate=gate,
                        leftover=functools.partial(self.leftover, uri), durable=self.durable)
            except (Stale, DeadlineExceeded):
                continue  # decide again on the latest version (or refuse, past the deadline)
            except SemmemError:
                raise
            except Exception as exc:  # the engine's errors: OSError mostly, not only
                if not is_commit_conflict(exc):
                    uncertain = True  # it may have landed: a retry must replay, never 400
                    if not await moved_on(tbl, version):
                        raise Unavailable(f"write failed: {exc}") from exc
                await backoff(attempt)
                continue
            self.groups += 1
            if new.version != version + 1 or self.fence.late(gate.at):
                # Rebased, or ended past the budget: every version in between must still be
                # there (Lance checked the commit against them), or it may have landed blind.
                present = await asyncio.to_thread(listed_versions, uri, self.storage_options)
                missing = gaps(present, version, int(new.version))
                if missing:
                    log.error("a commit to %s landed over removed versions %s; checking the "
                              "partition", table_name(partition), missing)
                    await self.suspect(partition)
                    raise Unavailable("the write's outcome is uncertain; retry it")
            # Our own commit confirms its version: nothing above it existed before the commit
            # began (a later version needs ours first), so the next write commits unlisted.
            self._confirmed[partition] = (int(new.version), gate.began)
            if self.refresh:
                await tbl.checkout_latest()  # before any answer: a read after it sees the write
            follow = self.committed(partition, batch, new, layout_now)
            _settle(outcomes)
            if follow is not None:
                await follow()
            return
        raise Unavailable("too many concurrent writers on this partition; retry")

    def _decide(self, group: list[Pending], view: WriteView
                ) -> tuple[list[tuple[Pending, Any]], list[tuple[Pending, Mutation]], WriteView]:
        """Each write's decision in turn, each seeing the ones before it: the quota is
        checked on the partition as the writes before it in the group left it, at the
        version the group commits on (a lost race decides again), so it is exact across
        replicas and concurrent writers. The view returned is the partition as the whole
        group leaves it (its counts are the commit's)."""
        outcomes: list[tuple[Pending, Any]] = []
        mutations: list[tuple[Pending, Mutation]] = []
        for p in group:
            try:
                decision = p.plan(view)
                if isinstance(decision, Mutation):
                    following = after(view, decision)
                    self.quota.check(view, following)
            except Exception as exc:  # a refusal (or a fault) of this write only
                outcomes.append((p, exc))
                continue
            if isinstance(decision, Mutation):
                mutations.append((p, decision))
                outcomes.append((p, decision.result))
                view = following
            else:
                outcomes.append((p, decision))
        return outcomes, mutations, view


def _past(pending: Iterable[Pending]) -> bool:
    now = now_ms()
    return any(p.deadline_ms is not None and now >= p.deadline_ms for p in pending)


def _in_time(group: list[Pending], uncertain: bool = False) -> list[Pending]:
    """The writes whose deadline has not passed; the others are refused now: with 400 when
    nothing of theirs was committed, with 503 (retry: the retry replays) when an earlier
    attempt's commit may have landed."""
    now, kept = now_ms(), []
    for p in group:
        if p.deadline_ms is not None and now >= p.deadline_ms:
            if not p.future.done():
                p.future.set_exception(
                    Unavailable("the write's outcome is uncertain; retry it") if uncertain
                    else DeadlineExceeded("deadline passed before the write was committed"))
        else:
            kept.append(p)
    return kept


class _Gate:
    """What a write checks once its files are written, right before it commits: no deadline
    has passed, and its read version is confirmed the latest recently enough (the fence,
    ``store/commit/fence.py``; an old confirmation is renewed by listing the versions)."""

    def __init__(self, fence: Fence, ds: Any, confirmed: float | None,
                 pending: list[Pending]) -> None:
        self.fence, self.ds, self.pending = fence, ds, pending
        self.at = confirmed if confirmed is not None else -math.inf
        self.began = -math.inf  # when the commit was let through (its version's confirmation)

    def __call__(self) -> None:
        if _past(self.pending):
            raise DeadlineExceeded("deadline passed before the write was committed")
        now = time.monotonic()
        if now - self.at > self.fence.fresh:
            if int(self.ds.latest_version) != int(self.ds.version):
                raise Stale("a newer version exists")
            self.at = now
        self.began = time.monotonic()


async def _no_check(partition: str) -> None:
    return None


def _settle(outcomes: list[tuple[Pending, Any]]) -> None:
    for p, outcome in outcomes:
        if p.future.done():
            continue
        if isinstance(outcome, BaseException):
            p.future.set_exception(outcome)
        else:
            p.future.set_result(outcome)
