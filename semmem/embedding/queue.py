"""The model's queue: every embedding runs on one dedicated thread, shared fairly between the
callers that wait for it.

Each embedding is charged to a caller (``caller``: the partition it is for) and waits in that
caller's lane. The model thread takes its next call from the lanes in turn, the lane served
least recently first (a caller with nothing queued before, first of all), each call within a
budget of characters (the encoder's ``call_chars``, about a quarter second of its time on one
core: 2,048 for e5, one window; else :data:`CALL_CHARS`), at most :data:`MAX_BATCH` texts
(the encoder's batch). So nobody waits behind
another caller's long input for more than one call: a caller's thousand pieces or six 60 KB
recalls run a call at a time, between the other callers' calls, never as one block.

Short texts that arrive while the model is busy go together in its next call (several texts
in one call cost less each than one by one), from several lanes while the budget lasts.

Work nobody waits for any more does not keep the model: the task that awaited it was
cancelled (a recall of an empty partition answered without its vector, a request abandoned),
so its texts not yet handed to the model are dropped from its lane, and a call already on the
model that nobody awaits any more is stopped (``embedding.calls``; ONNX Runtime stops
between the graph's nodes).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from semmem.embedding.calls import Interrupt, Stopped, running
from semmem.embedding.embedder import Embedder, embed_queries, queries_differ
from semmem.items import Vectors

CALL_CHARS = 2048  # a call's budget, in characters, where the encoder names none
MAX_BATCH = 32  # texts in one call


@dataclass(eq=False)
class _Job:
    """One ``embed`` call's texts, longest first (a call then holds texts of like length,
    little of it padding), handed to the model a call at a time."""

    texts: list[str]
    order: list[int]  # each text's place in the call's list
    query: bool
    future: asyncio.Future[np.ndarray]
    rows: list[np.ndarray] = field(default_factory=list)
    taken: int = 0  # texts handed to the model so far

    @property
    def left(self) -> int:
        """Texts not yet handed to the model."""
        return len(self.texts) - self.taken


@dataclass(eq=False)
class _Lane:
    """A caller's jobs, in arrival order, and when the model last served it."""

    jobs: deque[_Job] = field(default_factory=deque)
    served: int = 0  # the model call that last took from it (0: none yet)


class ModelQueue:
    """One model thread for a process's embeddings, shared fairly between callers.

    torch's CPU kernels run ~25 % slower on any thread while another thread of the process has
    also run them, and asyncio's default pool hands work to whichever worker is free: so every
    model call goes to one thread (cores sharing an embedder should share the executor too).
    """

    def __init__(self, embedder: Embedder, executor: ThreadPoolExecutor | None = None, *,
                 call_chars: int | None = None, max_batch: int = MAX_BATCH) -> None:
        self.embedder = embedder
        self.executor = executor or ThreadPoolExecutor(1, thread_name_prefix="semmem-model")
        self.call_chars: int = call_chars or getattr(embedder, "call_chars", None) \
            or CALL_CHARS
        self.max_batch = max_batch
        # a model whose two sides differ (e5's prefixes) embeds queries apart from writes
        self._differ = queries_differ(embedder)
        self._sides = {False: _side(embedder, False), True: _side(embedder, True)}
        self._lanes: dict[str, _Lane] = {}
        self._draining = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[None] | None = None
        self._running: tuple[Interrupt, list[_Job]] | None = None  # the call on the model
        self.calls = 0  # model calls made (for tests and metrics)

    async def embed(self, texts: list[str], *, query: bool = False,
                    caller: str = "") -> np.ndarray:
        """Vectors of ``texts`` (one row each), as stored or (``query``) as searched with,
        their model time charged to ``caller`` (a partition; ``""``: a lane of its own).

        Cancelling the awaiting task drops the texts not yet handed to the model.
        """
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        loop = asyncio.get_running_loop()
        if self._draining and self._loop is not loop:
            if self._loop is not None and not self._loop.is_closed():
                # Another event loop is draining (a core shared across threads): embed alone.
                alone: np.ndarray = await loop.run_in_executor(
                    self.executor, self._sides[query and self._differ], texts)
                return alone
            self._lanes, self._draining = {}, False  # that loop is gone, and its waiters
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        job = _Job([texts[i] for i in order], order, query and self._differ,
                   loop.create_future())
        job.future.add_done_callback(self._abandoned)
        self._lanes.setdefault(caller, _Lane()).jobs.append(job)
        if not self._draining:
            self._draining, self._loop = True, loop
            self._task = asyncio.ensure_future(self._drain())
        return await job.future

    @property
    def waiting(self) -> int:
        """Texts queued for the model and still awaited (for tests and metrics)."""
        return sum(job.left for lane in self._lanes.values() for job in lane.jobs
                   if not job.future.done())

    async def _drain(self) -> None:
        try:
            while True:
                picked = self._pick()
                if picked is None:
                    return
                query, parts = picked
                texts = [t for job, start, end in parts for t in job.texts[start:end]]
                interrupt = Interrupt()
                self._running = interrupt, [job for job, _, _ in parts]
                try:
                    vectors = await asyncio.get_running_loop().run_in_executor(
                        self.executor, functools.partial(
                            running, interrupt, functools.partial(self._sides[query], texts),
                            bulk=any(len(job.texts) > self.max_batch for job, _, _ in parts)))
                except Stopped:
                    continue  # nobody awaited any of it
                except Exception as exc:
                    self._running = None
                    for job, _, _ in parts:
                        job.taken = len(job.texts)  # the rest of it is not run either
                        if not job.future.done():
                            job.future.set_exception(exc)
                    continue
                self._running = None
                at = 0
                for job, start, end in parts:
                    job.rows.extend(vectors[at:at + end - start])
                    at += end - start
                    if len(job.rows) == len(job.texts) and not job.future.done():
                        longest_first = np.vstack(job.rows)
                        in_order = np.empty_like(longest_first)
                        in_order[job.order] = longest_first
                        job.future.set_result(in_order)
        finally:
            self._running = None
            self._draining = False

    def _abandoned(self, _: asyncio.Future[np.ndarray]) -> None:
        """A job's future is done: if nobody awaits any of the call on the model, stop it."""
        if self._running is not None:
            interrupt, jobs = self._running
            if all(job.future.cancelled() for job in jobs):
                interrupt.stop()

    def _pick(self) -> tuple[bool, list[tuple[_Job, int, int]]] | None:
        """The next call's texts, as (job, first, end) parts of one side: from the lanes served
        least recently first, within the call's budget (its first text always)."""
        self.calls += 1
        parts: list[tuple[_Job, int, int]] = []
        side: bool | None = None
        spent = count = 0
        for caller, lane in sorted(self._lanes.items(), key=lambda kv: kv[1].served):
            while lane.jobs and count < self.max_batch:
                job = lane.jobs[0]
                if job.future.done():  # cancelled: nobody waits for the rest
                    lane.jobs.popleft()
                    continue
                if side is None:
                    side = job.query
                if job.query != side:
                    break  # a lane's jobs go in order; the other side waits for another call
                start = job.taken
                while job.left and count < self.max_batch:
                    # a text past the budget is cut by the model (MiniLM at 256 tokens, e5's
                    # queries at one window): one budget, a call of its own
                    size = min(len(job.texts[job.taken]), self.call_chars)
                    if count and spent + size > self.call_chars:
                        break
                    job.taken, spent, count = job.taken + 1, spent + size, count + 1
                if job.taken > start:
                    parts.append((job, start, job.taken))
                    lane.served = self.calls
                if job.left:
                    break  # the call is full
                lane.jobs.popleft()  # all of it is on its way
            if not lane.jobs:
                del self._lanes[caller]
            if count >= self.max_batch or spent >= self.call_chars:
                break
        if side is None:
            self.calls -= 1
            return None
        return side, parts


def _side(embedder: Embedder, query: bool) -> Callable[[list[str]], Vectors]:
    """The embedder's call for stored texts, or for texts searched with."""
    if query:
        return lambda texts: embed_queries(embedder, texts)
    return embedder.embed_batch
