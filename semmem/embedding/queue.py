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

The model thread takes its next call from the lanes itself, the moment the last one ends, and
hands each caller its vectors straight from the thread (``call_soon_threadsafe`` on the
caller's own loop): the event loop is asked for nothing between two calls, so a busy loop
(requests being parsed, hints, commits) never leaves the model idle, and a vector reaches its
caller one turn of the loop after the model made it. Only an idle model is started from the
loop, at the end of the loop's turn, so that the texts arriving in the same turn (a model's
parallel tool calls in process, a gather) go in one call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semmem.embedding.calls import Interrupt, Stopped, running
from semmem.embedding.embedder import Embedder, embed_queries, queries_differ
from semmem.items import Vectors

CALL_CHARS = 2048  # a call's budget, in characters, where the encoder names none
MAX_BATCH = 32  # texts in one call


@dataclass(eq=False)
class _Job:
    """One ``embed`` call's texts, longest first (a call then holds texts of like length,
    little of it padding), handed to the model a call at a time; answered on ``loop``."""

    texts: list[str]
    order: list[int]  # each text's place in the call's list
    query: bool
    future: asyncio.Future[np.ndarray]
    loop: asyncio.AbstractEventLoop
    rows: list[np.ndarray] = field(default_factory=list)  # the model thread's alone
    taken: int = 0  # texts handed to the model so far

    @property
    def left(self) -> int:
        """Texts not yet handed to the model."""
        return len(self.texts) - self.taken

    @property
    def gone(self) -> bool:
        """Nobody can receive its vectors any more (cancelled, answered, loop closed)."""
        return self.future.done() or self.loop.is_closed()


@dataclass(eq=False)
class _Lane:
    """A caller's jobs, in arrival order, and when the model last served it."""

    jobs: deque[_Job] = field(default_factory=deque)
    served: int = 0  # the model call that last took from it (0: none yet)


class ModelQueue:
    """One model thread for a process's embeddings, shared fairly between callers.

    torch's CPU kernels run ~25 % slower on any thread while another thread of the process has
    also run them, and asyncio's default pool hands work to whichever worker is free: so every
    model call goes to one thread (cores sharing an embedder should share the executor too;
    each caller is answered on its own event loop).
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
        # The lanes, the call on the model and whether the model thread is at work are shared
        # between the event loops that queue work and the model thread that takes it.
        self._lock = threading.Lock()
        self._lanes: dict[str, _Lane] = {}
        self._active = False  # a turn of the model thread is submitted or running
        self._starting: asyncio.AbstractEventLoop | None = None  # a loop yet to start it
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
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        job = _Job([texts[i] for i in order], order, query and self._differ,
                   loop.create_future(), loop)
        job.future.add_done_callback(self._abandoned)
        with self._lock:
            self._lanes.setdefault(caller, _Lane()).jobs.append(job)
            # idle, or the loop that was to start it closed before it did
            idle = not self._active or (self._starting is not None
                                        and self._starting.is_closed())
            if idle:
                self._active, self._starting = True, loop
        if idle:  # at the end of this turn of the loop: the texts arriving in it go together
            loop.call_soon(self._start)
        return await job.future

    @property
    def waiting(self) -> int:
        """Texts queued for the model and still awaited (for tests and metrics)."""
        with self._lock:
            return sum(job.left for lane in self._lanes.values() for job in lane.jobs
                       if not job.future.done())

    def _start(self) -> None:
        """Give the model thread its next turn (it picks the call itself when it runs)."""
        self._starting = None
        try:
            self.executor.submit(self._turn)
        except RuntimeError as exc:  # the executor was shut down: nobody will run these
            with self._lock:
                jobs = [job for lane in self._lanes.values() for job in lane.jobs]
                self._lanes, self._active = {}, False
            _answer([(job, exc) for job in jobs])

    def _turn(self) -> None:
        """On the model thread: one call, its vectors handed out, then the next turn queued
        (behind whatever else was given the thread meanwhile) while work is left."""
        with self._lock:
            picked = self._pick()
            if picked is None:
                self._active = False
                return
            query, parts = picked
            interrupt = Interrupt()
            self._running = interrupt, [job for job, _, _ in parts]
        answers: list[tuple[_Job, np.ndarray | BaseException]] = []
        try:
            answers = self._call(interrupt, query, parts)
        finally:
            with self._lock:
                self._running = None
                more = bool(self._lanes)
                self._active = more
            if more:
                self._start()
            # Last: once the loop is woken it takes the interpreter, and whatever this thread
            # still had to do would wait for it (and the loop, in turn, for this thread).
            _answer(answers)

    def _call(self, interrupt: Interrupt, query: bool, parts: list[tuple[_Job, int, int]]
              ) -> list[tuple[_Job, np.ndarray | BaseException]]:
        """The call's vectors (or its error) for each job it completes."""
        texts = [t for job, start, end in parts for t in job.texts[start:end]]
        try:
            vectors = running(interrupt, functools.partial(self._sides[query], texts),
                              bulk=any(len(job.texts) > self.max_batch for job, _, _ in parts))
        except Stopped:
            return []  # nobody awaited any of it
        except Exception as exc:
            return self._failed(parts, exc)
        at = 0
        done: list[tuple[_Job, np.ndarray | BaseException]] = []
        try:
            if len(vectors) != len(texts):
                raise ValueError(f"the model gave {len(vectors)} vectors for {len(texts)} texts")
            for job, start, end in parts:
                job.rows.extend(vectors[at:at + end - start])
                at += end - start
                if len(job.rows) == len(job.texts):
                    longest_first = np.vstack(job.rows)
                    in_order = np.empty_like(longest_first)
                    in_order[job.order] = longest_first
                    done.append((job, in_order))
        except Exception as exc:  # every caller of the call hears it; none waits forever
            return self._failed(parts, exc)
        return done

    def _failed(self, parts: list[tuple[_Job, int, int]], exc: Exception
                ) -> list[tuple[_Job, np.ndarray | BaseException]]:
        """``exc`` for each job of a failed call; the rest of each is not run either."""
        with self._lock:
            for job, _, _ in parts:
                job.taken = len(job.texts)
        return [(job, exc) for job, _, _ in parts]

    def _abandoned(self, _: asyncio.Future[np.ndarray]) -> None:
        """A job's future is done: if nobody awaits any of the call on the model, stop it."""
        with self._lock:
            held = self._running
        if held is not None:
            interrupt, jobs = held
            if all(job.future.cancelled() for job in jobs):
                interrupt.stop()

    def _pick(self) -> tuple[bool, list[tuple[_Job, int, int]]] | None:
        """The next call's texts, as (job, first, end) parts of one side: from the lanes served
        least recently first, within the call's budget (its first text always). Called with
        the lock held."""
        self.calls += 1
        parts: list[tuple[_Job, int, int]] = []
        side: bool | None = None
        spent = count = 0
        for caller, lane in sorted(self._lanes.items(), key=lambda kv: kv[1].served):
            while lane.jobs and count < self.max_batch:
                job = lane.jobs[0]
                if job.gone:  # cancelled: nobody waits for the rest
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


def _answer(outcomes: Sequence[tuple[_Job, np.ndarray | BaseException]]) -> None:
    """Hand each job its outcome on its loop (from any thread): one wake-up per loop, not per
    job (each one costs the model thread a round trip for the interpreter lock)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]] = {}
    for job, outcome in outcomes:
        by_loop.setdefault(job.loop, []).append((job.future, outcome))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, settled)


def _settle(settled: list[tuple[asyncio.Future[Any], np.ndarray | BaseException]]) -> None:
    """Each future's outcome, unless it is done already (cancelled meanwhile)."""
    for future, outcome in settled:
        if future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


def _side(embedder: Embedder, query: bool) -> Callable[[list[str]], Vectors]:
    """The embedder's call for stored texts, or for texts searched with."""
    if query:
        return lambda texts: embed_queries(embedder, texts)
    return embedder.embed_batch
