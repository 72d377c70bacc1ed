"""Scale properties that small, fast tests can still check (the big runs are benchmarks).

Writes decide on write views and never load a partition; a partition crossing the index
threshold keeps answering (before and after its index exists); caches stay within bounds.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from tests.support.processes import results_of


async def _memory(path: Path, **kw: int) -> Memory:
    embedder = HashingEmbedder()
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id, **kw)
    await store.open()
    return Memory(store, embedder, index_candidates=30)


async def test_writes_never_load_the_partition(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, write_loads=0)
    await memory.import_("p", [{"text": f"fact {i}"} for i in range(300)], batch_size=64)
    await memory.remember("p", "one more fact")
    await memory.update("p", 3, "fact three, edited")
    await memory.forget("p", 4)
    assert await memory.remember("p", "FACT 7") == {
        "status": "stored", "n": 8, "count": 300, "existing": True}
    assert memory.store.cache_stats()["items"] == 0  # no snapshot was built for any write
    assert (await memory.stats("p"))["count"] == 300


async def test_recall_works_across_the_index_threshold_before_and_after_indexing(
    tmp_path: Path,
) -> None:
    memory = await _memory(tmp_path, index_threshold=100)
    await memory.import_("p", [{"text": f"note {i} on subject{i % 9}"} for i in range(90)])
    assert not (await memory.store.read_view("p")).indexed
    before = await memory.recall("p", "note 33 subject6", 120)
    await memory.import_("p", [{"text": f"later note {i} on subject{i % 9}"} for i in range(40)])
    view = await memory.store.read_view("p")
    assert view.indexed and view.count == 130  # past the threshold, no index yet: exact search
    assert (await memory.recall("p", "note 33 subject6", 120)).text.split("\n")[0] == \
        before.text.split("\n")[0] == "34. note 33 on subject6"
    report = await memory.store.maintain("p")
    assert report is not None and report.indexed == "built"
    assert (await memory.recall("p", "note 33 subject6", 120)).text.split("\n")[0] == \
        "34. note 33 on subject6"


def _writer(path: str, worker: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    import asyncio

    async def go() -> list[int]:
        memory = await _memory(Path(path), index_threshold=50)
        return [(await memory.remember("p", f"worker {worker} fact {i}"))["n"]
                for i in range(10)]

    queue.put(asyncio.run(go()))


async def test_processes_writing_an_indexed_partition_lose_nothing(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, index_threshold=50)
    await memory.import_("p", [{"text": f"base {i}"} for i in range(80)])
    await memory.maintain("p")
    assert (await memory.store.read_view("p")).indexed
    numbers = [n for ns in results_of(_writer, [(str(tmp_path), w) for w in range(2)])
               for n in ns]
    assert sorted(numbers) == list(range(81, 101))
    assert (await memory.store.read_view("p")).count == 100
    found = await memory.search("p", "worker 1 fact 9", 1)
    assert found["items"][0]["text"] == "worker 1 fact 9" and found["count"] == 100


async def test_stats_of_an_indexed_partition_do_not_load_it(tmp_path: Path) -> None:
    memory = await _memory(tmp_path, index_threshold=50)
    await memory.import_("p", [{"text": f"fact {i}"} for i in range(80)])
    await memory.forget("p", 5)
    await memory.forget("p", 6)
    stats = await memory.stats("p")
    assert (stats["count"], stats["highest"], stats["forgotten"]) == (78, 80, 2)
    assert memory.store.cache_stats()["items"] == 0
