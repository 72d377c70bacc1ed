"""The model queue: one model thread shared fairly between callers (a caller's long input runs
a call at a time, between the others' calls), and work nobody awaits any more dropped before it
reaches the model. The model is held (``HeldEmbedder``) to line the work up; the order is read
from the calls the model received, never from the clock."""

from __future__ import annotations

import asyncio

import numpy as np

from semmem.embedding.fakes import HashingEmbedder
from semmem.embedding.queue import CALL_CHARS, ModelQueue
from tests.support.model import HeldEmbedder

LONG = "tell me everything about the long weekend plans " * 1250  # 60 KB


async def _until(condition: object) -> None:
    """Yield to the loop until ``condition()`` holds (the queue's state, changed by tasks)."""
    for _ in range(10_000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def _held(model: HeldEmbedder, queue: ModelQueue) -> asyncio.Task[np.ndarray]:
    """A call of caller ``x`` in the model, held there."""
    model.hold()
    holder = asyncio.ensure_future(queue.embed(["holding the model"], caller="x"))
    await asyncio.to_thread(model.entered.wait, 30)
    return holder


async def test_embed_another_callers_short_text_runs_before_a_callers_queued_long_ones() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    holder = await _held(model, queue)
    longs = [asyncio.ensure_future(queue.embed([f"{i} {LONG}"], query=True, caller="a"))
             for i in range(6)]
    await _until(lambda: queue.waiting == 6)
    short = asyncio.ensure_future(queue.embed(["where do I live?"], query=True, caller="b"))
    await _until(lambda: queue.waiting == 7)
    model.open.set()
    await asyncio.gather(holder, short, *longs)
    b = model.call_of("where do I live?")
    firsts = sorted(model.call_of(f"{i} {LONG}") for i in range(6))
    assert all(len(model.calls[i]) == 1 for i in firsts)  # a long text is a call of its own
    assert firsts[0] < b < firsts[1]  # behind one of caller a's, never behind six
    assert model.calls[b] == ["where do I live?"]


async def test_embed_one_callers_many_texts_run_a_call_at_a_time_between_others() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    holder = await _held(model, queue)
    pieces = [f"piece {i} " + "x" * 1000 for i in range(40)]  # one caller's ingest
    bulk = asyncio.ensure_future(queue.embed(pieces, caller="a"))
    await _until(lambda: queue.waiting == 40)
    short = asyncio.ensure_future(queue.embed(["a short fact"], caller="b"))
    await _until(lambda: queue.waiting == 41)
    model.open.set()
    vectors, _, _ = await asyncio.gather(bulk, short, holder)
    assert np.allclose(vectors, HashingEmbedder().embed_batch(pieces))  # in order, all there
    # the holder, then at most one call of a's (20 of them) ahead of b's
    assert model.call_of("a short fact") <= 2 < len(model.calls) - 10
    assert all(sum(len(t) for t in call) <= CALL_CHARS for call in model.calls)


async def test_embed_cancelled_before_the_model_takes_it_never_runs() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    holder = await _held(model, queue)
    gone = asyncio.ensure_future(queue.embed(["nobody waits for this"], query=True,
                                             caller="a"))
    kept = asyncio.ensure_future(queue.embed(["somebody waits for this"], query=True,
                                             caller="a"))
    await _until(lambda: queue.waiting == 2)
    gone.cancel()
    await _until(lambda: queue.waiting == 1)
    model.open.set()
    await asyncio.gather(holder, kept)
    assert model.call_of("somebody waits for this") > 0  # the same queue ran the one awaited
    assert model.call_of("nobody waits for this") == -1


async def test_embed_concurrent_short_texts_share_a_call() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    holder = await _held(model, queue)
    texts = [f"fact {i} of caller {i % 3}" for i in range(12)]
    waiting = [asyncio.ensure_future(queue.embed([t], caller=str(i % 3)))
               for i, t in enumerate(texts)]
    await _until(lambda: queue.waiting == 12)
    model.open.set()
    results = await asyncio.gather(*waiting)
    await holder
    assert len(model.calls) == 2 and sorted(model.calls[1]) == sorted(texts)
    for text, vector in zip(texts, results, strict=True):
        assert np.allclose(vector, HashingEmbedder().embed_batch([text]))


async def test_embed_a_call_on_the_model_nobody_awaits_any_more_is_stopped() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    model.hold()
    awaited = asyncio.ensure_future(queue.embed(["somebody waits for this"], caller="a"))
    await asyncio.to_thread(model.entered.wait, 30)
    assert not model.stops.is_set()  # the control: a call still awaited stays on the model
    awaited.cancel()
    assert await asyncio.to_thread(model.stops.wait, 30)
    assert model.stopped == [["somebody waits for this"]]
    model.open.set()
    after = await queue.embed(["the model is free again"], caller="b")
    assert np.allclose(after, HashingEmbedder().embed_batch(["the model is free again"]))


async def test_embed_a_call_shared_with_a_waiter_is_not_stopped() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    model.hold()
    gone = asyncio.ensure_future(queue.embed(["gone"], caller="a"))
    kept = asyncio.ensure_future(queue.embed(["kept"], caller="b"))
    await asyncio.to_thread(model.entered.wait, 30)
    assert model.calls == [["gone", "kept"]]  # one call on the model, held there
    gone.cancel()
    await _until(gone.done)  # its future's callbacks ran (the queue's first)
    model.open.set()
    await kept
    assert model.stopped == [] and not model.stops.is_set()


async def test_embed_the_next_call_starts_while_the_event_loop_is_busy() -> None:
    """The model thread takes its next call itself: a loop busy with other work (here: held
    still, synchronously) does not leave the model idle between two calls."""
    model = HeldEmbedder()
    queue = ModelQueue(model)
    holder = await _held(model, queue)
    queued = asyncio.ensure_future(queue.embed(["the next call"], caller="y"))
    await _until(lambda: queue.waiting == 1)
    model.entered.clear()
    model.open.set()
    # the loop stands still here: only the model thread can start the queued call
    assert model.entered.wait(30)
    await asyncio.gather(holder, queued)
    assert model.calls == [["holding the model"], ["the next call"]]


async def test_embed_callers_on_two_event_loops_share_the_model_each_answered_on_its_own() -> None:
    model = HeldEmbedder()
    queue = ModelQueue(model)
    holder = await _held(model, queue)

    def other_loop() -> np.ndarray:
        return asyncio.run(queue.embed(["from another loop"], caller="z"))

    other = asyncio.ensure_future(asyncio.to_thread(other_loop))
    here = asyncio.ensure_future(queue.embed(["from this loop"], caller="y"))
    await _until(lambda: queue.waiting == 2)
    model.open.set()
    theirs, ours, _ = await asyncio.gather(other, here, holder)
    assert np.allclose(theirs, HashingEmbedder().embed_batch(["from another loop"]))
    assert np.allclose(ours, HashingEmbedder().embed_batch(["from this loop"]))
    assert sorted(model.calls[1]) == ["from another loop", "from this loop"]  # one call


class _ShortOnce(HashingEmbedder):
    """An encoder broken for its first call: one vector fewer than the texts it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        vectors = super().embed_batch(texts)
        if self.broken:
            self.broken = False
            return vectors[1:]
        return vectors


async def test_embed_a_call_answered_short_fails_its_callers_and_the_queue_goes_on() -> None:
    queue = ModelQueue(_ShortOnce())
    first = asyncio.ensure_future(queue.embed(["one"], caller="a"))
    second = asyncio.ensure_future(queue.embed(["two"], caller="b"))
    outcomes = await asyncio.gather(first, second, return_exceptions=True)
    assert all(isinstance(o, ValueError) for o in outcomes)  # one call, both told
    assert np.allclose(await queue.embed(["three"]), HashingEmbedder().embed_batch(["three"]))


class _BulkSeen(HashingEmbedder):
    """The fake embedder, noting for each call whether it is a part of a bulk job."""

    def __init__(self) -> None:
        super().__init__()
        self.bulk: list[bool] = []

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        from semmem.embedding.calls import in_bulk

        self.bulk.append(in_bulk())
        return super().embed_batch(texts)


async def test_embed_a_large_jobs_calls_are_bulk_a_small_ones_not() -> None:
    """A job of more texts than a call takes may run on every core (the encoder's bulk
    session), as it did when it was one call; a query never does."""
    model = _BulkSeen()
    queue = ModelQueue(model)
    await queue.embed(["one question"], query=True)
    await queue.embed([f"fact {i}" for i in range(32)])
    assert model.bulk == [False, False]
    await queue.embed([f"piece {i} " + "y" * 200 for i in range(33)])
    assert len(model.bulk) > 3 and all(model.bulk[2:])


def test_a_calls_budget_is_the_encoders() -> None:
    """The encoder names how many characters one call holds (through the query cache too)."""
    from semmem.embedding.embedder import CachedEmbedder

    class Slow(HashingEmbedder):
        call_chars = 100

    assert ModelQueue(HashingEmbedder()).call_chars == CALL_CHARS
    assert ModelQueue(CachedEmbedder(Slow())).call_chars == 100
