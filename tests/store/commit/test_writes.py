"""Group commit: writes that arrive while a commit is in flight go together in the next one,
each with its own result, refusal, idempotency record and cursor check."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from semmem.contract import make_cursor
from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import Conflict, DeadlineExceeded, IdempotencyMismatch, NotFound
from semmem.items import now_ms
from semmem.memory import Memory, Operation
from tests.support.memory import open_memory
from tests.support.processes import results_of


def _op(op_id: str, tool: str, args: dict[str, Any], cursor: str | None = None,
        deadline_ms: int | None = None) -> Operation:
    return Operation.of(op_id, tool, args, cursor, deadline_ms)


async def test_concurrent_mixed_writes_are_grouped_and_each_answered(memory: Memory) -> None:
    for i in range(10):
        await memory.remember("p", f"seed fact {i}")
    cursor = make_cursor("p", (await memory.snapshot("p")).seq)
    await memory.update("p", 2, "seed fact two, changed after the cursor")
    writer = memory.store.writer
    groups_before = writer.groups
    dup = _op("dup-op", "remember", {"text": "the duplicated fact"})
    calls: list[Any] = [
        *(memory.remember("p", f"new fact {i}") for i in range(20)),
        *(memory.remember("p", "The duplicated   FACT") for _ in range(4)),
        memory.remember("p", "the duplicated fact", op=dup),
        memory.remember("p", "the duplicated fact", op=dup),  # a retry in the same group
        memory.update("p", 5, "seed fact five, edited"),
        memory.forget("p", 7),
        memory.update("p", 999, "no such item"),  # 404
        memory.forget("p", 2, cursor=cursor),  # changed after the cursor: 409
        memory.remember("p", "late", op=_op("late", "remember", {"text": "late"},
                                            deadline_ms=now_ms() - 1)),
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)
    new, dups = results[:20], results[20:26]
    update5, forget7, missing, stale, late = results[26:]
    assert all(isinstance(r, dict) for r in new + dups + [update5, forget7])
    numbers = [r["n"] for r in new]  # type: ignore[index]
    dup_numbers = {r["n"] for r in dups}  # type: ignore[index]
    assert len(dup_numbers) == 1  # one number for the text, whatever the spelling
    assert len(set(numbers) | dup_numbers) == 21 and min(numbers) > 10
    assert sum(1 for r in dups if not r.get("existing")) == 1  # type: ignore[union-attr]
    assert dups[-1] == dups[-2]  # the retried operation replays its first answer
    assert isinstance(missing, NotFound) and isinstance(stale, Conflict)
    assert isinstance(late, DeadlineExceeded)
    assert writer.groups - groups_before < 10  # far fewer commits than writes
    items = {it.n: it.text for it in await memory.list("p")}
    assert len(items) == 10 + 20 + 1 - 1
    assert items[5] == "seed fact five, edited" and 7 not in items
    assert sorted(t for t in items.values() if t.startswith("new fact")) == \
        sorted(f"new fact {i}" for i in range(20))
    # a replay after the group still answers byte for byte; the id for another call is refused
    assert await memory.remember("p", "the duplicated fact", op=dup) == dups[-1]
    with pytest.raises(IdempotencyMismatch):
        await memory.remember("p", "other", op=_op("dup-op", "remember", {"text": "other"}))


def _process(path: str, worker: int, queue: Any) -> None:
    async def go() -> list[tuple[str, int, bool]]:
        memory = await open_memory(Path(path), HashingEmbedder())
        texts = [f"worker {worker} fact {i}" for i in range(15)] + \
            [f"shared fact {i}" for i in range(8)]
        results = await asyncio.gather(*(memory.remember("p", t) for t in texts))
        await memory.close()
        return [(t, r["n"], bool(r.get("existing"))) for t, r in zip(texts, results, strict=True)]

    queue.put(asyncio.run(go()))


@pytest.mark.timeout(180)
def test_two_processes_grouping_writes_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    answers = [row for rows in results_of(_process, [(str(tmp_path), w) for w in range(2)],
                                          timeout=150) for row in rows]

    async def stored() -> dict[str, int]:
        memory = await open_memory(tmp_path, HashingEmbedder())
        items = {it.text: it.n for it in await memory.list("p")}
        await memory.close()
        return items

    items = asyncio.run(stored())
    assert len(items) == 2 * 15 + 8 == len(set(items.values()))  # each text once, numbers unique
    for text, n, _ in answers:
        assert items[text] == n  # every acknowledged write is there, under its number
    fresh = [n for _, n, existing in answers if not existing]
    assert len(fresh) == len(set(fresh)) == len(items)


class _SlowEmbedder(HashingEmbedder):
    """The fake model, slower per call than the real one (a margin for a busy machine)."""

    def embed_batch(self, texts: list[str]) -> Any:
        import time

        time.sleep(0.025)
        return super().embed_batch(texts)


async def test_a_turn_of_parallel_writes_commits_as_one_group(tmp_path: Path) -> None:
    """The first write of a turn is embedded alone while the others arrive; its group waits
    for them (they are still being embedded) and all five commit together."""
    memory = await open_memory(tmp_path / "db", _SlowEmbedder())
    try:
        target = await memory.remember("p", "a fact to edit")
        writer = memory.store.writer
        before, calls = writer.groups, memory.model.calls

        async def later(delay: float, text: str) -> Any:
            await asyncio.sleep(delay)  # the turn's other calls arrive a moment after
            return await memory.remember("p", text)

        results = await asyncio.gather(
            memory.remember("p", "first of the turn"),
            *(later(0.002 * i, f"turn fact {i}") for i in range(1, 4)),
            memory.update("p", target["n"], "the edited fact"))
        assert writer.groups - before == 1
        assert memory.model.calls - calls >= 2  # the first was embedded before the rest came
        assert sorted(r["n"] for r in results) == [1, 2, 3, 4, 5]
        assert writer._coming == {} and writer._first == {}
        lone = writer.groups
        await memory.forget("p", 2)  # nothing announced: goes at once, alone
        assert writer.groups == lone + 1 and writer._first == {}
    finally:
        await memory.close()


async def test_a_group_interrupted_while_it_gathers_answers_its_writes(tmp_path: Path) -> None:
    """A drain cancelled while it waits for the rest of a turn (a shutdown) refuses the writes
    it held, and a write that arrives after it starts a new group."""
    from semmem.errors import Unavailable

    memory = await open_memory(tmp_path / "db", _SlowEmbedder())
    try:
        await memory.remember("p", "a fact before")
        first = asyncio.create_task(memory.remember("p", "held when the drain stops"))
        await asyncio.sleep(0.002)  # the first is on the model alone; the second waits for it
        second = asyncio.create_task(memory.remember("p", "still being embedded"))
        writer = memory.store.writer
        for _ in range(500):
            queue = writer._queues.get("p")
            if queue is not None and queue.pending and writer._coming.get("p"):
                break
            await asyncio.sleep(0.001)
        else:
            pytest.fail("the first write was never queued while the second was embedding")
        assert queue.task is not None
        queue.task.cancel()
        with pytest.raises(Unavailable):
            await first
        assert (await second)["n"] == 2  # the refused write took no number
        assert [it.text for it in await memory.list("p")] == ["a fact before",
                                                               "still being embedded"]
    finally:
        await memory.close()
