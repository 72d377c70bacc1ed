"""The memory core: numbered facts per partition, semantic recall within a byte budget.

Plain Python with its collaborators passed in (``Memory(store, embedder, ranker)``); the HTTP
server, the CLI and the notebooks are thin callers of it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from semmem.embedder import Embedder
from semmem.errors import Conflict, IdempotencyMismatch, InvalidArguments, InvalidInput, NotFound
from semmem.items import (
    RECORD_FIELDS,
    Item,
    clean_attrs,
    clean_text,
    dedupe_key,
    iso,
    now_ms,
    one_line,
)
from semmem.packing import pack
from semmem.ranking import Ranker, Scored
from semmem.snapshot import OpRecord, Snapshot
from semmem.store import ItemRow, Lookup, Mutation, Store, op_key

MAX_RECALL_BYTES = 16_384
MAX_SOURCES = 100
MAX_SEARCH_LIMIT = 50
TITLE_CHARS = 80


@dataclass(frozen=True)
class Operation:
    """Identity of a write for idempotency: who asked (id) and exactly what (fingerprint)."""

    operation_id: str
    fingerprint: str
    deadline_ms: int | None = None

    @classmethod
    def of(
        cls, operation_id: str, tool: str, arguments: Any, cursor: str | None,
        deadline_ms: int | None = None,
    ) -> Operation:
        """Fingerprint a tool call: same tool, arguments and cursor give the same fingerprint."""
        body = json.dumps([tool, arguments, cursor], sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
        return cls(operation_id, digest, deadline_ms)


@dataclass(frozen=True)
class Recall:
    """What a host receives: rendered text, one source per line, and the read cursor."""

    text: str
    sources: list[dict[str, str]]
    cursor: str
    scored: list[Scored]

    def wire(self) -> dict[str, Any]:
        """The contract's recall response body."""
        return {"text": self.text, "sources": self.sources, "cursor": self.cursor}


@dataclass(frozen=True)
class ImportReport:
    """Outcome of a bulk import."""

    imported: int
    duplicates: int
    batches: int


def source_of(item: Item) -> dict[str, str]:
    """The contract's source entry for a recalled item."""
    return {
        "id": str(item.n),
        "title": one_line(item.text)[:TITLE_CHARS],
        "revision": str(item.revision),
        "updatedAt": iso(item.updated),
    }


def make_cursor(partition: str, seq: int) -> str:
    """Opaque read state: the partition's write sequence, tagged with the partition."""
    tag = hashlib.sha256(partition.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"c1.{seq}.{tag}"


def parse_cursor(partition: str, cursor: str) -> int:
    """The write sequence a cursor names.

    Raises:
        InvalidInput: not a cursor of this partition.
    """
    parts = cursor.split(".") if isinstance(cursor, str) else []
    if len(parts) != 3 or parts[0] != "c1" or not parts[1].isdigit():
        raise InvalidInput("cursor is not one semmem issued")
    if make_cursor(partition, int(parts[1])) != cursor:
        raise InvalidInput("cursor belongs to another partition")
    return int(parts[1])


class Memory:
    """Remember, update, forget, search and recall numbered facts."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        ranker: Ranker | None = None,
        *,
        idempotency_ttl_ms: int = 24 * 3600 * 1000,
        on_write: Callable[[str, bool], None] | None = None,
        on_drop: Callable[[str], None] | None = None,
        index_candidates: int = 100,
        model_executor: ThreadPoolExecutor | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.ranker = ranker or Ranker()
        self.idempotency_ttl_ms = idempotency_ttl_ms
        self.on_write = on_write
        # Called after a partition is deleted (the server purges its name from the registry).
        self.on_drop = on_drop
        # How many nearest items the vector index hands to ranking in an indexed partition.
        self.index_candidates = index_candidates
        # Every model call runs on this one thread: torch's CPU kernels run ~25 % slower on any
        # thread while another thread of the process has also run them (measured 9.4 → 12 ms
        # per query), and asyncio's default pool hands work to whichever worker is free.
        # Cores sharing one embedder should share this thread too (pass it in).
        self.model_executor = model_executor or ThreadPoolExecutor(
            1, thread_name_prefix="semmem-model")
        self._batcher = _Batcher(embedder, self.model_executor)

    async def _embed(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1:
            return (await self._batcher.embed(texts[0])).reshape(1, -1)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.model_executor, self.embedder.embed_batch, texts)

    def _replay(self, snap: Snapshot, op: Operation | None) -> dict[str, Any] | None:
        if op is None:
            return None
        record = snap.ops.get(op_key(op.operation_id))
        if record is None:
            return None
        if record.fingerprint != op.fingerprint:
            raise IdempotencyMismatch(
                "operationId was already used with a different tool, arguments or cursor",
                {"operationId": op.operation_id},
            )
        return record.result_json()

    def _commit(
        self, op: Operation | None, result: dict[str, Any], items: list[ItemRow] | None = None,
        hwm: int | None = None,
    ) -> Mutation:
        """A mutation that also records ``result`` under the operation id, if there is one."""
        record = None
        if op is not None:
            record = OpRecord(
                op_key(op.operation_id), op.fingerprint, json.dumps(result, ensure_ascii=False),
                max(now_ms() + self.idempotency_ttl_ms, op.deadline_ms or 0),
            )
        return Mutation(items=items or [], op=record, hwm=hwm, result=result)

    async def _write(
        self, partition: str, plan: Callable[[Snapshot], Mutation | dict[str, Any]],
        op: Operation | None, forgot: bool = False, *, numbers: list[int] | None = None,
        texts: list[str] | None = None,
    ) -> dict[str, Any]:
        lookup = Lookup(
            ops=[op_key(op.operation_id)] if op is not None else [],
            numbers=numbers or [], texts=texts or [],
        )
        attempted = False

        def planned(view: Snapshot) -> Mutation | dict[str, Any]:
            nonlocal attempted
            decision = plan(view)
            attempted = attempted or isinstance(decision, Mutation)
            return decision

        try:
            return await self.store.write(
                partition, planned, lookup=lookup, deadline_ms=op.deadline_ms if op else None
            )
        finally:
            # Any attempted commit may have landed (even one that reported an error), and a
            # write that drops a text always schedules its purge (replays included: a purge is
            # idempotent). Duplicates and replays of other writes change nothing.
            if self.on_write is not None and (attempted or forgot):
                self.on_write(partition, forgot)

    @staticmethod
    def _check_target(snap: Snapshot, n: int, cursor_seq: int | None) -> Item:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InvalidArguments("n must be an integer ≥ 1")
        item = snap.get(n)
        tomb = snap.tombstones.get(n)
        changed = item.seq if item else tomb.seq if tomb else None
        if cursor_seq is not None and changed is not None and changed > cursor_seq:
            raise Conflict(
                f"item {n} changed after your recall; recall again and retry",
                {"n": n},
            )
        if item is None:
            why = "was forgotten" if tomb else "does not exist"
            raise NotFound(f"item {n} {why} in this memory", {"n": n})
        return item

    # ----- writes ------------------------------------------------------------------------------
    async def remember(
        self, partition: str, text: str, *, op: Operation | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store a new fact, or point at the existing one with the same text.

        Returns:
            ``{"status": "stored", "n", "count"}`` plus ``"existing": true`` for a duplicate.
        Raises:
            InvalidArguments: text empty, blank or over 2,000 characters.
            IdempotencyMismatch, DeadlineExceeded, Unavailable.
        """
        text = clean_text(text)
        fields = {k: v for k, v in clean_attrs(attrs or {}).items() if v is not None}
        vector = (await self._embed([text]))[0]

        def plan(snap: Snapshot) -> Mutation | dict[str, Any]:
            replay = self._replay(snap, op)
            if replay is not None:
                return replay
            same = snap.find_text(text)
            if same is not None:
                result = {"status": "stored", "n": same.n, "count": snap.count, "existing": True}
                return result if op is None else self._commit(op, result)
            n = snap.hwm + 1
            ts = now_ms()
            result = {"status": "stored", "n": n, "count": snap.count + 1}
            row = ItemRow(n, text, vector, ts, ts, 1, attrs=fields)
            return self._commit(op, result, [row], n)

        return await self._write(partition, plan, op, texts=[text])

    async def update(
        self, partition: str, n: int, text: str | None = None, *, cursor: str | None = None,
        op: Operation | None = None, attrs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Replace item ``n``'s text (and/or owner record fields) keeping its number.

        Raises:
            NotFound: ``n`` does not exist (or was forgotten before the cursor).
            Conflict: the item changed after ``cursor``.
        """
        new_text = clean_text(text) if text is not None else None
        changes = clean_attrs(attrs or {})
        cursor_seq = parse_cursor(partition, cursor) if cursor else None
        vector = (await self._embed([new_text]))[0] if new_text is not None else None

        def plan(snap: Snapshot) -> Mutation | dict[str, Any]:
            replay = self._replay(snap, op)
            if replay is not None:
                return replay
            item = self._check_target(snap, n, cursor_seq)
            merged = dict(item.attrs)
            for key, value in changes.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = value
            idx = snap.index_of(n)
            assert idx is not None
            row = ItemRow(
                n, new_text if new_text is not None else item.text,
                vector if vector is not None else snap.vectors[idx],
                item.ts, now_ms(), item.revision + 1, attrs=merged,
            )
            result = {"status": "stored", "n": n, "count": snap.count}
            return self._commit(op, result, [row])

        # a replaced text must leave the disk like a forgotten one: purge as after a forget
        return await self._write(partition, plan, op, forgot=new_text is not None,
                                 numbers=_as_numbers([n]))

    async def forget(
        self, partition: str, n: int, *, cursor: str | None = None, op: Operation | None = None
    ) -> dict[str, Any]:
        """Forget item ``n``: its text goes now from recall and, after maintenance, from disk.

        Its number is never reused.

        Raises:
            NotFound, Conflict: as for ``update``.
        """
        cursor_seq = parse_cursor(partition, cursor) if cursor else None

        def plan(snap: Snapshot) -> Mutation | dict[str, Any]:
            replay = self._replay(snap, op)
            if replay is not None:
                return replay
            item = self._check_target(snap, n, cursor_seq)
            row = ItemRow(n, None, None, item.ts, now_ms(), item.revision + 1, forgotten=True)
            result = {"status": "stored", "n": n, "count": snap.count - 1, "forgotten": True}
            return self._commit(op, result, [row])

        return await self._write(partition, plan, op, forgot=True, numbers=_as_numbers([n]))

    async def import_(
        self, partition: str, records: Iterable[dict[str, Any]], *, batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Bulk-add records (``{"text", "n"?, "ts"?, "updated"?, record fields…}``).

        Numbers in the records are kept when free in the partition, so an export imports
        back unchanged; texts already present are skipped. Embeds in batches, one commit per
        batch.
        """
        totals = {"imported": 0, "duplicates": 0, "batches": 0}

        async def commit(batch: list[dict[str, Any]], texts: list[str], vectors: Any) -> None:
            counts = {"new": 0, "dup": 0}

            def plan(snap: Snapshot) -> Mutation | dict[str, Any]:
                rows: list[ItemRow] = []
                seen = set()
                hwm = snap.hwm
                # The view holds the items with the asked-for numbers; numbers above the
                # high-water mark were never assigned.
                taken = {it.n for it in snap.items} | set(snap.tombstones)
                wanted = [r.get("n") for r in batch]
                counts["dup"] = 0
                for rec, text, vec, want in zip(batch, texts, vectors, wanted, strict=True):
                    key = dedupe_key(text)
                    if snap.find_text(text) is not None or key in seen:
                        counts["dup"] += 1
                        continue
                    seen.add(key)
                    if isinstance(want, int) and not isinstance(want, bool) and want >= 1 \
                            and want not in taken:
                        n = want
                    else:
                        n = hwm + 1
                        while n in taken:
                            n += 1
                    taken.add(n)
                    hwm = max(hwm, n)
                    ts = _ms(rec.get("ts"))
                    rows.append(ItemRow(
                        n, text, vec, ts, _ms(rec.get("updated"), ts),
                        int(rec.get("revision") or 1),
                        attrs=clean_attrs(
                            {k: rec[k] for k in RECORD_FIELDS if rec.get(k) is not None}),
                    ))
                counts["new"] = len(rows)
                if not rows:
                    return {}
                return Mutation(items=rows, hwm=hwm)

            await self._write(partition, plan, None, texts=texts,
                              numbers=_as_numbers(r.get("n") for r in batch))
            totals["imported"] += counts["new"]
            totals["duplicates"] += counts["dup"]
            totals["batches"] += 1
            if progress is not None:
                progress(len(batch))

        # Pipelined: batch k+1 is embedded (in a thread) while batch k commits, so the model
        # never waits for the store; commits stay in order, one at a time.
        pending: asyncio.Future[None] | None = None
        try:
            for batch in _batches(records, batch_size):
                texts = [clean_text(r.get("text")) for r in batch]
                vectors = await self._embed(texts)
                if pending is not None:
                    await pending
                pending = asyncio.ensure_future(commit(batch, texts, vectors))
            if pending is not None:
                await pending
        finally:
            if pending is not None and not pending.done():
                await asyncio.wait([pending])
        return ImportReport(totals["imported"], totals["duplicates"], totals["batches"])

    async def delete_partition(self, partition: str) -> bool:
        """Delete the partition and every file of it. Returns whether it existed."""
        existed = await self.store.drop(partition)
        if existed and self.on_drop is not None:
            self.on_drop(partition)
        return existed

    # ----- reads -------------------------------------------------------------------------------
    async def recall(self, partition: str, text: str | None, max_bytes: int) -> Recall:
        """The facts relevant to ``text``, rendered within ``max_bytes``; no side effects.

        Blank or ``None`` text recalls the most recently updated facts, newest first.

        Raises:
            InvalidInput: ``max_bytes`` outside 1–16,384.
        """
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) \
                or not 1 <= max_bytes <= MAX_RECALL_BYTES:
            raise InvalidInput(f"maxBytes must be an integer from 1 to {MAX_RECALL_BYTES}")
        blank = text is None or not text.strip()
        # The query embedding (the bulk of a recall) runs while the snapshot is checked.
        embedding = None if blank else asyncio.ensure_future(self._embed([text or ""]))
        try:
            snap = await self.store.read_view(partition)
        except BaseException:
            if embedding is not None:
                embedding.cancel()
            raise
        cursor = make_cursor(partition, snap.seq)
        if not snap.count:
            if embedding is not None:
                embedding.cancel()
            return Recall("", [], cursor, [])
        if embedding is None:
            if snap.indexed:
                snap = await self.store.recent(snap, 3 * MAX_SOURCES)
            ordered = sorted(
                (it for it in snap.items if it.surfaced), key=lambda it: (-it.updated, -it.n)
            )
            packed = pack(ordered, max_bytes, MAX_SOURCES)
            return Recall(packed.text, [source_of(it) for it in packed.items], cursor, [])
        qvec = (await embedding)[0]
        if snap.indexed:
            snap = await self.store.nearest(snap, qvec, self.index_candidates)
        ranked = [s for s in self.ranker.rank(snap, qvec, text or "") if s.item.surfaced]
        packed, chosen = self.ranker.pack(snap, ranked, max_bytes, MAX_SOURCES)
        return Recall(packed.text, [source_of(it) for it in packed.items], cursor, chosen)

    async def search(self, partition: str, query: str, limit: int = 10) -> dict[str, Any]:
        """The ``limit`` items most similar to ``query``, with scores (no relevance floor).

        Returns:
            ``{"items": [{"n", "text", "score", "updatedAt", record fields…}], "count"}``.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidArguments("query must be a non-empty string")
        if isinstance(limit, bool) or not isinstance(limit, int) \
                or not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidArguments(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
        snap = await self.store.read_view(partition)
        if not snap.count:
            return {"items": [], "count": 0}
        total = snap.count
        qvec = (await self._embed([query]))[0]
        if snap.indexed:
            snap = await self.store.nearest(snap, qvec, max(limit, self.index_candidates))
        ranked = self.ranker.rank(snap, qvec, query, floor=False)[:limit]
        items = []
        for s in ranked:
            entry: dict[str, Any] = {
                "n": s.item.n, "text": s.item.text, "score": round(s.score, 4),
                "updatedAt": iso(s.item.updated),
            }
            entry.update({k: s.item.attrs[k] for k in RECORD_FIELDS[:4] if k in s.item.attrs})
            items.append(entry)
        return {"items": items, "count": total}

    async def list(
        self, partition: str, *, offset: int = 0, limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Item]:
        """Live items in number order (or newest first), paged."""
        snap = await self.store.snapshot(partition)
        items = list(reversed(snap.items)) if newest_first else list(snap.items)
        end = None if limit is None else offset + limit
        return items[offset:end]

    async def export(self, partition: str) -> AsyncIterator[dict[str, Any]]:
        """Every live item as a JSON-ready record (the JSONL export format)."""
        for item in await self.list(partition):
            yield item.public()

    async def stats(self, partition: str) -> dict[str, Any]:
        """Counters of one partition (read without loading it when it is indexed)."""
        snap = await self.store.read_view(partition)
        forgotten = (await self.store.count_forgotten(partition) if snap.indexed
                     else len(snap.tombstones))
        return {
            "partition": partition, "count": snap.count, "highest": snap.hwm,
            "forgotten": forgotten, "version": snap.version, "seq": snap.seq,
            "model": snap.model,
        }

    async def reindex(
        self, partition: str, *, batch_size: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Re-embed every item of ``partition`` with this memory's model. Returns the count.

        An offline migration: run it with no server writing to the store.
        """
        snap = await self.store.snapshot(partition)
        vectors: dict[int, np.ndarray] = {}
        for start in range(0, snap.count, batch_size):
            chunk = snap.items[start:start + batch_size]
            embedded = await self._embed([it.text for it in chunk])
            vectors.update({it.n: vec for it, vec in zip(chunk, embedded, strict=True)})
            if progress is not None:
                progress(len(chunk))
        await self.store.replace_vectors(partition, vectors)
        return len(vectors)


class _Batcher:
    """Coalesces concurrent single-text embeddings (queries, remembers) into one model call.

    The model is one lock and two cores: eight queries embedded together cost ~3 ms each
    instead of ~10 ms one by one. Nothing waits on purpose: a text arriving while the model is
    idle goes at once, alone; texts arriving while it is busy go together in the next call.
    """

    def __init__(self, embedder: Embedder, executor: ThreadPoolExecutor,
                 max_batch: int = 32) -> None:
        self.embedder = embedder
        self.executor = executor
        self.max_batch = max_batch
        self._pending: list[tuple[str, asyncio.Future[np.ndarray]]] = []
        self._draining = False
        self._task: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0  # model calls made (for tests and metrics)

    async def embed(self, text: str) -> np.ndarray:
        """The vector of ``text``, embedded with whatever else is waiting."""
        loop = asyncio.get_running_loop()
        if self._draining and self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                # Another event loop is draining (a core shared across threads): embed alone.
                vectors = await loop.run_in_executor(self.executor, self.embedder.embed_batch,
                                                     [text])
                alone: np.ndarray = vectors[0]
                return alone
            self._pending, self._draining = [], False  # that loop is gone, and its waiters
        future: asyncio.Future[np.ndarray] = loop.create_future()
        self._pending.append((text, future))
        if not self._draining:
            self._draining, self._loop = True, loop
            self._task = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch = self._pending[:self.max_batch]
                del self._pending[:self.max_batch]
                texts = [t for t, _ in batch]
                self.calls += 1
                try:
                    vectors = await asyncio.get_running_loop().run_in_executor(
                        self.executor, self.embedder.embed_batch, texts)
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), vector in zip(batch, vectors, strict=True):
                    if not future.done():
                        future.set_result(vector)
        finally:
            self._draining = False


def _batches(records: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for record in records:
        batch.append(record)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _as_numbers(values: Iterable[Any]) -> list[int]:
    """The valid item numbers among ``values`` (the rest are refused by the write itself)."""
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 1]


def _ms(value: Any, default: int | None = None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value:
        from semmem.items import parse_iso

        try:
            return parse_iso(value)
        except ValueError as exc:
            raise InvalidArguments(f"not an ISO 8601 timestamp: {value!r}") from exc
    return default if default is not None else now_ms()
