"""The memory core: numbered facts per partition, semantic recall within a byte budget.

Plain Python with its collaborators passed in (``Memory(store, embedder, ranker)``); the HTTP
server, the CLI, the console and the notebooks are thin callers of it, and nothing else
touches the store.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from semmem import results, rules, tracing
from semmem.contract import (
    MAX_RECALL_BYTES,
    MAX_SEARCH_LIMIT,
    MAX_SOURCES,
    make_cursor,
    parse_cursor,
)
from semmem.embedding.embedder import Embedder
from semmem.embedding.queue import ModelQueue
from semmem.errors import InvalidArguments, InvalidInput
from semmem.importing import ImportReport
from semmem.items import EXPIRES, Item, clean_attrs, clean_text, future_expiry, trim
from semmem.items.filters import Filter
from semmem.items.metadata import METADATA
from semmem.keyed.items import Keyed
from semmem.lifecycle.owners import Owners
from semmem.lifecycle.retention import Retention
from semmem.lifecycle.stats import PartitionStats
from semmem.ranking.ranker import Ranker, Scored
from semmem.ranking.similar import (
    MAX_SIMILAR,
    SIMILAR_THRESHOLD,
    Rows,
    nearest,
    standing_out,
)
from semmem.results import Recall, recall_candidates
from semmem.rules import Operation
from semmem.scheduling.observing import QuietObserver, WriteObserver
from semmem.scoped import filtered
from semmem.scoped.filtered import Filtered
from semmem.store.rows import HINT_COLUMNS, RECALL_COLUMNS
from semmem.store.views import IndexedView, PartitionSnapshot, ReadView
from semmem.writes import Writes

if TYPE_CHECKING:  # the store's engine loads only where a store is opened
    from semmem.store.tables import Store

__all__ = ["ImportReport", "Memory", "Operation", "PartitionStats", "QuietObserver", "Recall",
           "WriteObserver", "recall_candidates"]


class Memory(Writes, Owners, Filtered):
    """Remember, update, forget, search and recall numbered facts (and, ``apart``, the
    application's store items: ``lifecycle/apart.py``)."""

    def __init__(
        self, store: Store, embedder: Embedder, ranker: Ranker | None = None, *,
        idempotency_ttl_ms: int = 24 * 3600 * 1000, observer: WriteObserver | None = None,
        index_candidates: int = 100, model_executor: ThreadPoolExecutor | None = None,
        similar_threshold: float = SIMILAR_THRESHOLD, retention: Retention | None = None,
        application: Memory | None = None, apart: bool = False,
    ) -> None:
        self.store = store
        self.apart, self._application, self._opening = apart, application, asyncio.Lock()
        self.embedder = embedder
        self.ranker = ranker or Ranker()
        self.idempotency_ttl_ms = idempotency_ttl_ms
        self.observer = observer
        # How many nearest items the vector index hands to ranking in an indexed partition.
        self.index_candidates = index_candidates
        # The least cosine a fact has to be listed in a write's ``similar`` hints.
        self.similar_threshold = similar_threshold
        self._rows = Rows()  # concurrent writes' hint rows, one product
        self.model = ModelQueue(embedder, model_executor)
        # What is expired is hidden from every read here (and swept by lifecycle/sweep.py).
        self.retention = retention or Retention(store)

    @classmethod
    async def open(cls, uri: str, embedder: Embedder, ranker: Ranker | None = None,
                   **store_options: Any) -> Memory:
        """A memory over the store at ``uri`` (opened here; ``close`` it when done)."""
        from semmem.lifecycle.upgrading import upgrade
        from semmem.store.tables import Store

        store = Store(uri, dim=embedder.dim, model_id=embedder.model_id, **store_options)
        await store.open()
        memory = cls(store, embedder, ranker)
        await upgrade(memory)  # the format gate: this release's format before any read
        return memory

    def with_ranker(self, ranker: Ranker) -> Memory:
        """The same memory (store, model thread) ranking with ``ranker``."""
        return Memory(self.store, self.embedder, ranker,
                      idempotency_ttl_ms=self.idempotency_ttl_ms,
                      index_candidates=self.index_candidates, model_executor=self.model_executor,
                      similar_threshold=self.similar_threshold, retention=self.retention,
                      application=self._application, apart=self.apart)

    def _beside(self, store: Store) -> Memory:
        return Memory(store, self.embedder, idempotency_ttl_ms=self.idempotency_ttl_ms,
                      model_executor=self.model_executor, apart=True)

    @property
    def uri(self) -> str:
        """Where the store lives (a directory or an object storage URI)."""
        return self.store.uri

    @property
    def keyed(self) -> Keyed:
        """This memory's keyed items (sessions, store items)."""
        return Keyed(self)

    @property
    def model_executor(self) -> ThreadPoolExecutor:
        """The one thread every model call of this core runs on."""
        return self.model.executor

    # ----- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the observer's background work (the server's maintenance)."""
        if self.observer is not None:
            self.observer.start(await self.store.partitions())
        if not self.apart and self._application is not None:
            await self._application.start()

    async def close(self) -> None:
        """Stop background work and drop the store's handles."""
        if self.observer is not None:
            await self.observer.stop()
        await self.close_application()
        await self.store.close()

    async def ping(self) -> None:
        """A round trip to the store (readiness); raises ``Unavailable`` if it does not answer."""
        await self.store.meta()

    # ----- writes ------------------------------------------------------------------------------
    async def remember(
        self, partition: str, text: str, *, op: Operation | None = None,
        attrs: dict[str, Any] | None = None, expires_at: str | None = None,
        metadata: dict[str, Any] | None = None, scope: Filter | None = None,
    ) -> dict[str, Any]:
        """Store a new fact (with ``metadata``, ``semmem.items.metadata``), or point at the
        existing one with the same text (its metadata left as it is); ``scope``: a binding's,
        stamped on the fact, duplicates and similar facts found only within it.

        Returns:
            ``{"status": "stored", "n", "count"}`` plus ``"existing": true`` for a duplicate,
            or ``"similar": [{"n", "text", "score"}]`` for a new fact that probably restates or
            supersedes others (at most three, best first; absent when none).
        Raises:
            InvalidArguments: text empty, blank or over 2,000 characters; an expiry passed;
                bad metadata.
            IdempotencyMismatch, DeadlineExceeded, Unavailable.
        """
        op = op and op.keyed(self.store.secret)  # records keep a keyed fingerprint
        text = clean_text(text)
        metadata = scope.stamp(metadata) if scope is not None else metadata
        asked = {**(attrs or {}), **({EXPIRES: expires_at} if expires_at is not None else {}),
                 **({METADATA: metadata} if metadata is not None else {})}
        fields = {k: v for k, v in clean_attrs(asked).items() if v is not None}
        future_expiry(fields)
        with self.store.coming(partition):  # its group waits for it (the rest of the turn)
            vector = await self._embed(text, caller=partition)
            hints = await self._hints(partition, vector)
        alive = filtered.scoped(self.retention.alive(await self.retention.max_age(partition)),
                                 scope)
        plan = rules.remember(text, vector, fields, op, self.idempotency_ttl_ms, hints, alive)
        return await self.retention.counted(partition, await self._write(
            partition, plan, op, numbers=hints.candidates, texts=[text]),
            sets_expiry=EXPIRES in fields)

    async def update(
        self, partition: str, n: int, text: str | None = None, *, cursor: str | None = None,
        op: Operation | None = None, attrs: dict[str, Any] | None = None, owner: bool = True,
        metadata: dict[str, Any] | None = None, scope: Filter | None = None,
    ) -> dict[str, Any]:
        """Replace item ``n``'s text (and/or owner record fields, and/or its ``metadata``,
        replaced whole: ``{}`` clears it) keeping its number.

        ``owner=False`` (the model's tools): owner-curated records are refused. ``scope``: a
        binding's; a fact outside it is not found, new metadata keeps it.

        Raises:
            NotFound: no live item ``n`` the caller may edit (``targets.not_found``: never
                given, not the model's, or forgotten, and not since the cursor).
            Conflict: the item existed at ``cursor``'s state and changed since.
            Forbidden: not ``owner``, and the item is hidden or from a map import.
        """
        op = op and op.keyed(self.store.secret)
        new_text = clean_text(text) if text is not None else None
        metadata = scope.stamp(metadata) if scope is not None and metadata is not None \
            else metadata
        # an owner may end a fact now: a past expiry
        changes = clean_attrs({**(attrs or {}),
                               **({METADATA: metadata} if metadata is not None else {})})
        cursor_seq = parse_cursor(partition, cursor) if cursor else None
        vector, hints = None, rules.Hints()
        if new_text is not None:
            with self.store.coming(partition):
                vector = await self._embed(new_text, caller=partition)
                hints = await self._hints(partition, vector)
        alive = filtered.scoped(self.retention.alive(await self.retention.max_age(partition)),
                                 scope)
        plan = rules.update(n, new_text, vector, changes, cursor_seq, op, self.idempotency_ttl_ms,
                            owner, hints, alive, filtered.reach(scope))
        # a replaced text or record field must leave the disk like a forgotten text: the
        # write path purges what the decided row drops (``writes.drops``), and a replay too
        return await self.retention.counted(partition, await self._write(
            partition, plan, op, dropped=True, numbers=[n, *hints.candidates]),
            sets_expiry=EXPIRES in changes)

    async def _hints(self, partition: str, vector: np.ndarray) -> rules.Hints:
        """The facts a written text may restate, to be scored again at the decided version: the
        nearest recallable ones in the partition's cached view that stand out from the rest of
        it (``cutoff``), else (a write never loads a partition; an indexed one has no whole
        row to compare with) the nearest at the threshold alone."""
        with tracing.span("semmem.hints"):
            return await self._hint_lookup(partition, vector)

    async def _hint_lookup(self, partition: str, vector: np.ndarray) -> rules.Hints:
        # A few more than are listed: some may change before the write is decided.
        limit = 2 * MAX_SIMILAR
        view = self.store.cached_view(partition)
        if view is None:
            numbers = await self.store.nearest_numbers(partition, vector, limit)
            return rules.Hints(numbers, self.similar_threshold)
        view = await self.retention.live(view)
        if not view.count:
            return rules.Hints()
        if isinstance(view, IndexedView):
            # a few more than ``nearest`` sorts (4 × limit), reading no texts
            found = await self.retention.nearest(view, vector, 5 * limit, HINT_COLUMNS)
            near = nearest(found, vector, self.similar_threshold, limit=limit)
            return rules.Hints([c.item.n for c in near], self.similar_threshold)
        near, least = standing_out(view, vector, self.similar_threshold, limit=limit,
                                   scores=await self._rows.of(view, vector))
        return rules.Hints([c.item.n for c in near], least)

    async def merge(self, partition: str, n: int, into: int) -> dict[str, Any]:
        """Mark item ``n`` merged into item ``into`` in one write (``n`` stays on file, no
        longer recalled). Raises ``InvalidArguments`` (``into`` is ``n`` or not live) or
        ``NotFound`` (``n`` is not live)."""
        if into == n:
            raise InvalidArguments("an item cannot be merged into itself")
        return await self._write(partition, rules.merge(n, into), None, numbers=[n, into])

    async def forget(
        self, partition: str, n: int, *, cursor: str | None = None, op: Operation | None = None,
        owner: bool = True, scope: Filter | None = None,
    ) -> dict[str, Any]:
        """Forget item ``n``: gone from recall now, from every file within the forget window.

        Its number is never reused.

        Raises:
            NotFound, Conflict, Forbidden: as for ``update``.
        """
        op = op and op.keyed(self.store.secret)
        cursor_seq = parse_cursor(partition, cursor) if cursor else None
        plan = rules.forget(n, cursor_seq, op, self.idempotency_ttl_ms, owner,
                            filtered.reach(scope))
        return await self._write(partition, plan, op, dropped=True, numbers=[n])

    # ----- reads -------------------------------------------------------------------------------
    async def recall(self, partition: str, text: str | None, max_bytes: int, *,
                     filter: Filter | None = None) -> Recall:
        """The facts relevant to ``text`` (among those ``filter`` covers: a binding's scope),
        rendered within ``max_bytes``; no side effects.

        Blank or ``None`` text recalls the most recently updated facts, newest first.

        Raises:
            InvalidInput: ``max_bytes`` outside 1–16,384.
        """
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) \
                or not 1 <= max_bytes <= MAX_RECALL_BYTES:
            raise InvalidInput(f"maxBytes must be an integer from 1 to {MAX_RECALL_BYTES}")
        if filter is not None and not filter.empty:
            return await self.filtered_recall(partition, text, max_bytes, filter)
        blank = text is None or not text.strip()
        # The query embedding (the bulk of a recall) runs while the view is read.
        embedding = None if blank \
            else asyncio.ensure_future(self._embed_query(text or "", partition))
        try:  # ranked on the snapshot as it is, the expired (``hidden``) left out after; an
            # indexed view's candidates come through the filter (its count is not needed here)
            view = await self._read_view(partition)
            hidden = await self.retention.hidden(view)
        except BaseException:
            if embedding is not None:
                embedding.cancel()
            raise
        cursor = make_cursor(partition, view.seq)
        if view.count == len(hidden):
            if embedding is not None:
                embedding.cancel()
            return Recall([], [], cursor, [])
        if embedding is None:
            items = (await self.retention.recent(view, 3 * MAX_SOURCES)).items \
                if isinstance(view, IndexedView) else view.items
            return results.recent(items, max_bytes, cursor, hidden)
        qvec = await embedding
        found = await self.retention.nearest(
            view, qvec, recall_candidates(max_bytes, self.index_candidates), RECALL_COLUMNS)
        return results.relevant(self.ranker, found, qvec, text or "", max_bytes, cursor, hidden)

    async def search(self, partition: str, query: str, limit: int = 10, *,
                     filter: Filter | None = None) -> dict[str, Any]:
        """The ``limit`` items most similar to ``query``, with scores (no relevance floor),
        among the facts ``filter`` covers (``semmem.scoped.filtered``).

        Returns:
            ``{"items": [{"n", "text", "score", "updatedAt", record fields…}], "count"}``.
        """
        if not isinstance(query, str) or not trim(query):
            raise InvalidArguments("query must be a non-empty string")
        if isinstance(limit, bool) or not isinstance(limit, int) \
                or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidArguments(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
        if filter is not None and not filter.empty:
            return await self.filtered_search(await self._read_view(partition), query, limit,
                                              filter)
        view, hidden = await self.retention.split(await self._read_view(partition))
        if view.count == len(hidden):
            return {"items": [], "count": 0}
        qvec = await self._embed_query(query, partition)
        found = await self.retention.nearest(view, qvec, max(limit, self.index_candidates),
                                             RECALL_COLUMNS)
        return {"items": results.search_entries(self.ranker, found, qvec, query, limit, hidden),
                "count": results.shown_count(view, hidden)}

    async def _embed(self, text: str, query: bool = False, *, caller: str = "") -> np.ndarray:
        """A text's vector (the ``embed`` span of a request): as stored, or as searched with
        (``query``: a model with query prefixes embeds the two sides differently); its model
        time charged to ``caller`` (the partition it is for: ``embedding.queue``)."""
        with tracing.span("semmem.embed") as span:
            span.set("gen_ai.request.model", self.model.embedder.model_id)
            vector: np.ndarray = (await self.model.embed([text], query=query,
                                                         caller=caller))[0]
            return vector

    async def _embed_query(self, text: str, partition: str) -> np.ndarray:
        """A recall's or search's text (of ``partition``) as the model embeds what is
        searched with."""
        return await self._embed(text, query=True, caller=partition)

    async def _read_view(self, partition: str) -> ReadView:
        """The partition's read view (the ``view read`` span of a read)."""
        await self.retention.refresh()
        with tracing.span("semmem.view_read") as span:
            view = await self.store.read_view(partition)
            span.set("semmem.view.items", view.count)
            return view

    async def ranked(self, partition: str, text: str) -> list[Scored]:
        """Every recallable item above the relevance floor for ``text``, best first, with
        near-duplicates left out: the order recall packs from (for evaluation)."""
        await self.retention.refresh()
        snap = await self.store.snapshot(partition)
        qvec = await self._embed_query(text, partition)
        return results.ranked(self.ranker, snap, qvec, text, await self.retention.hidden(snap))

    async def read_view(self, partition: str) -> ReadView:
        """The store's read view without the facts expired now."""
        await self.retention.refresh()
        return await self.retention.live(await self.store.read_view(partition))

    async def snapshot(self, partition: str) -> PartitionSnapshot:
        """Every live item (none expired), tombstone and counter of ``partition``, as of now."""
        await self.retention.refresh()
        snap = await self.retention.live(await self.store.snapshot(partition))
        assert isinstance(snap, PartitionSnapshot)
        return snap

    async def get(self, partition: str, n: int) -> Item | None:
        """The live item ``n``, if there is one (not forgotten, not expired)."""
        return (await self.snapshot(partition)).get(n)

    async def partitions(self) -> list[str]:
        """Names of every partition, sorted."""
        return await self.store.partitions()

    async def list(
        self, partition: str, *, offset: int = 0, limit: int | None = None,
        newest_first: bool = False, filter: Filter | None = None,
    ) -> list[Item]:
        """Live items (those ``filter`` covers) in number order (or newest first), paged."""
        snap = await self.snapshot(partition)
        items = filtered.listed(list(snap.items), filter)
        items = list(reversed(items)) if newest_first else items
        end = None if limit is None else offset + limit
        return items[offset:end]
