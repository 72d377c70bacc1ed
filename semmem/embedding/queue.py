"""The model's queue: every embedding runs on one dedicated thread, and single texts that
arrive while the model is busy go together in its next call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from semmem.embedding.embedder import Embedder, embed_queries, queries_differ
from semmem.items import Vectors


class ModelQueue:
    """One model thread for a process's embeddings, with concurrent single texts coalesced.

    torch's CPU kernels run ~25 % slower on any thread while another thread of the process has
    also run them, and asyncio's default pool hands work to whichever worker is free: so every
    model call goes to one thread (cores sharing an embedder should share the executor too).
    """

    def __init__(self, embedder: Embedder, executor: ThreadPoolExecutor | None = None) -> None:
        self.embedder = embedder
        self.executor = executor or ThreadPoolExecutor(1, thread_name_prefix="semmem-model")
        self._batcher = _Batcher(embedder, self.executor)
        # a model whose two sides differ (e5's prefixes) coalesces queries apart from writes
        self._queries = _Batcher(embedder, self.executor, query=True) \
            if queries_differ(embedder) else self._batcher

    async def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Vectors of ``texts`` (one row each), as stored or (``query``) as searched with; a
        single text may share a call with others."""
        if len(texts) == 1:
            batcher = self._queries if query else self._batcher
            return (await batcher.embed(texts[0])).reshape(1, -1)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, _side(self.embedder, query), texts)

    @property
    def calls(self) -> int:
        """Model calls made for single texts (for tests and metrics)."""
        extra = self._queries.calls if self._queries is not self._batcher else 0
        return self._batcher.calls + extra


def _side(embedder: Embedder, query: bool) -> Callable[[list[str]], Vectors]:
    """The embedder's call for stored texts, or for texts searched with."""
    if query:
        return lambda texts: embed_queries(embedder, texts)
    return embedder.embed_batch


class _Batcher:
    """Coalesces concurrent single-text embeddings (queries, remembers) into one model call.

    A query arriving while the model is idle goes at once; texts arriving while it is busy go
    together in the next call (several texts in one call cost less each than one by one).
    Nothing waits for company: the writes of one turn are gathered at the commit instead
    (``store.writes.Writer.coming``), while the first of them is already being embedded.
    """

    def __init__(self, embedder: Embedder, executor: ThreadPoolExecutor,
                 max_batch: int = 32, *, query: bool = False) -> None:
        self.embedder = embedder
        self._embed = _side(embedder, query)
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
                vectors = await loop.run_in_executor(self.executor, self._embed,
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
                        self.executor, self._embed, texts)
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
