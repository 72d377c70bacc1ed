"""The LanceDB store: concurrency, hostile partition names, durable forget, models."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import shutil
import threading
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import lance
import pytest
from lance.optimize import Compaction

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import ModelMismatch
from semmem.items import now_ms
from semmem.memory import Memory
from semmem.store import ItemRow, Mutation, Store, WriteView, table_name
from semmem.store.upkeep.compaction import FRAGMENT_ROWS, head_fragment
from tests.support.files import files_with
from tests.support.memory import older_table, open_memory
from tests.support.processes import results_of

HOSTILE = ["x' OR '1'='1", "../../etc/passwd", "a/b\\c", "p\x00q", "ünï ☃ 名前", "", " ", "%s%n",
           "key = 'head'", "p_" + "0" * 40]


def _writer(path: str, worker: int, count: int, results: list[int] | None = None) -> list[int]:
    async def go() -> list[int]:
        mem = await open_memory(Path(path), HashingEmbedder())
        numbers = []
        for i in range(count):
            res = await mem.remember("shared", f"worker {worker} fact {i}")
            numbers.append(res["n"])
        return numbers

    numbers = asyncio.run(go())
    if results is not None:
        results.extend(numbers)
    return numbers


def _process_writer(path: str, worker: int, count: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue.put(_writer(path, worker, count))


@pytest.fixture
async def sealed(tmp_path: Path, fake_embedder: HashingEmbedder) -> AsyncIterator[Memory]:
    """A memory whose writes each seal their rows into a fragment of their own (a tail of one
    row): the many small fragments compaction merges, without writing hundreds of facts."""
    store = Store(str(tmp_path / "db"), dim=fake_embedder.dim,
                  model_id=fake_embedder.model_id, tail_rows=1)
    await store.open()
    mem = Memory(store, fake_embedder)
    yield mem
    await mem.close()


async def test_concurrent_remembers_in_one_process_get_distinct_numbers(memory: Memory) -> None:
    results = await asyncio.gather(*(memory.remember("p", f"fact {i}") for i in range(40)))
    assert sorted(r["n"] for r in results) == list(range(1, 41))
    assert len(await memory.list("p")) == 40


def test_concurrent_threads_with_own_connections_lose_nothing(tmp_path: Path) -> None:
    _writer(str(tmp_path), -1, 1)  # create the store first
    results: list[int] = []
    threads = [threading.Thread(target=_writer, args=(str(tmp_path), w, 15, results))
               for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(2, 47))
    items = asyncio.run(_list(tmp_path, "shared"))
    assert len(items) == 46 and len({it.n for it in items}) == 46


def test_concurrent_processes_lose_nothing(tmp_path: Path) -> None:
    _writer(str(tmp_path), -1, 1)
    numbers = [n for ns in results_of(_process_writer, [(str(tmp_path), w, 12) for w in range(2)])
               for n in ns]
    assert sorted(numbers) == list(range(2, 26))
    items = asyncio.run(_list(tmp_path, "shared"))
    assert sorted(it.text for it in items if it.n > 1) == sorted(
        f"worker {w} fact {i}" for w in range(2) for i in range(12))


async def _list(path: Path, partition: str) -> list:  # type: ignore[type-arg]
    mem = await open_memory(path, HashingEmbedder())
    return await mem.list(partition)


@pytest.mark.parametrize("partition", HOSTILE)
async def test_hostile_partition_is_just_a_partition(memory: Memory, partition: str) -> None:
    await memory.remember("victim", "secret of the victim")
    await memory.remember(partition, "my own fact")
    result = await memory.recall(partition, "secret victim", 1000)
    assert "victim" not in result.text
    assert [it.text for it in await memory.list(partition)] == ["my own fact"]
    assert table_name(partition).startswith("p_") and table_name(partition)[2:].isalnum()
    assert partition in await memory.partitions()


async def test_new_and_rewritten_tables_are_written_in_the_chosen_file_format(
        tmp_path: Path) -> None:
    """A partition's first write, and a reindex (the table replaced), write FILE_FORMAT files:
    the format a recall's candidate read was measured fastest in, not LanceDB's default."""
    from semmem.store.schema import FILE_FORMAT

    old = await open_memory(tmp_path, HashingEmbedder(dim=64, model_id="model-a"))
    await old.remember("p", "alpha fact")
    uri = await old.store.conn.uri_of("p")
    assert uri is not None and lance.dataset(uri).data_storage_version == FILE_FORMAT
    default = lance.write_dataset(lance.dataset(uri).to_table(limit=1),
                                  str(tmp_path / "default.lance")).data_storage_version
    assert default != FILE_FORMAT  # the choice is not the default (else this sees nothing)
    store = Store(str(tmp_path), dim=32, model_id="model-b")
    await store.open(check_model=False)
    assert await Memory(store, HashingEmbedder(dim=32, model_id="model-b")).reindex("p") == 1
    assert lance.dataset(uri).data_storage_version == FILE_FORMAT


async def test_stores_opened_at_once_on_a_new_directory_share_one_secret(
        tmp_path: Path) -> None:
    """The secret keys every idempotency record: replicas starting together on a new store
    must agree on it, or a retry on the other replica is refused as a different call."""
    for run in range(5):
        stores = [Store(str(tmp_path / f"db{run}"), dim=8, model_id="m") for _ in range(4)]
        await asyncio.gather(*(s.open() for s in stores))
        assert len({s.secret for s in stores}) == 1 and len(stores[0].secret) == 32
        again = Store(str(tmp_path / f"db{run}"), dim=8, model_id="m")
        await again.open()
        assert again.secret == stores[0].secret
        for s in [*stores, again]:
            await s.close()


async def test_partition_table_names_stay_inside_store(memory: Memory) -> None:
    for partition in HOSTILE:
        await memory.remember(partition, "x")
    root = Path(memory.uri)
    names = {p.name for p in root.iterdir()}
    assert all(n == "_semmem.lance" or (n.startswith("p_") and n.endswith(".lance"))
               for n in names)
    assert not (root.parent / "etc").exists()


async def test_forget_is_durably_gone_after_maintenance(sealed: Memory) -> None:
    marker = "zq-marker-7f3a9c-unique"
    for i in range(5):
        await sealed.remember("p", f"ordinary fact {i}")
    await sealed.remember("p", f"the secret is {marker}")
    await sealed.update("p", 6, f"the secret is still {marker}")
    for i in range(3):
        await sealed.remember("p", f"later fact {i}")
    root = Path(sealed.uri)
    assert files_with(root, marker.encode())
    await sealed.forget("p", 6)
    report = await sealed.store.maintain("p", retention=timedelta(0))
    assert report is not None and report.compacted
    assert files_with(root, marker.encode()) == []
    assert len(await sealed.list("p")) == 8
    assert (await sealed.remember("p", "after purge"))["n"] == 10


async def test_forgetting_the_newest_fact_purges_it_though_the_head_was_beside_it(
        sealed: Memory) -> None:
    """The newest fact shares its fragment with the head until the forget moves the head out;
    the purge leaves out only the head's new fragment, and rewrites the one with the text."""
    marker = "zq-newest-marker-5b1e"
    for i in range(3):
        await sealed.remember("p", f"ordinary fact {i}")
    await sealed.remember("p", f"the newest is {marker}")
    root = Path(sealed.uri)
    await sealed.forget("p", 4)
    report = await sealed.store.maintain("p", retention=timedelta(0))
    assert report is not None and report.compacted
    assert files_with(root, marker) == []
    assert [it.n for it in await sealed.list("p")] == [1, 2, 3]


async def test_forget_purge_respects_retention_window(memory: Memory) -> None:
    marker = "retention-marker-41d2"
    await memory.remember("p", marker)
    await memory.forget("p", 1)
    await memory.store.maintain("p", retention=timedelta(hours=1))
    assert files_with(Path(memory.uri), marker.encode())  # old version still inside window
    await memory.store.maintain("p", retention=timedelta(0))
    assert files_with(Path(memory.uri), marker.encode()) == []


async def test_delete_partition_leaves_no_bytes(memory: Memory) -> None:
    marker = "delete-marker-88e1"
    await memory.remember("gone", f"fact with {marker}")
    await memory.remember("kept", "another fact")
    await memory.delete_partition("gone")
    assert files_with(Path(memory.uri), marker.encode()) == []


async def test_delete_partition_name_leaves_registry_after_maintenance(memory: Memory) -> None:
    name = "partition-name-marker-5c1e"
    await memory.remember(name, "a fact")
    await memory.remember("kept", "another fact")
    await memory.delete_partition(name)
    await memory.store.maintain_registry(retention=timedelta(0))
    assert files_with(Path(memory.uri), name.encode()) == []
    assert await memory.partitions() == ["kept"]


async def test_new_partitions_created_together_share_one_registry_commit(
        tmp_path: Path, fake_embedder: HashingEmbedder) -> None:
    """Many first writes at once append their partitions' names in one registry commit (one
    commit each queued them for seconds on object storage), and a name two stores both
    appended (they created the table at once) is listed once, with the earliest creation."""
    path = tmp_path / "db"
    a, b = (await open_memory(path, fake_embedder), await open_memory(path, fake_embedder))
    try:
        registry = lance.dataset(str(path / "_semmem.lance"))
        before = registry.version
        names = [f"new-{i}" for i in range(12)]
        await asyncio.gather(*(a.remember(p, f"first fact of {p}") for p in names))
        registry = lance.dataset(str(path / "_semmem.lance"))
        assert registry.version - before < len(names)  # grouped, not one commit per name
        assert await b.partitions() == sorted(names)
        # Both stores record one partition's table, as two creating it at once do.
        await b.store.conn.registry.add_table(table_name("new-0"), "new-0", created=1)
        rows = await a.store.conn.registry.rows()
        assert rows[f"t:{table_name('new-0')}"]["created"] == 1
        assert await a.partitions() == sorted(names)
    finally:
        await a.close()
        await b.close()


async def test_maintenance_removes_old_unreferenced_files_only(sealed: Memory) -> None:
    """A data file no version references (what a write killed before its commit leaves) goes
    once older than ``orphan_age``; every referenced file stays."""
    marker = "orphan-marker-2b7d"
    await sealed.remember("p", f"the secret is {marker}")
    for i in range(3):
        await sealed.remember("p", f"fact {i}")
    data = Path(sealed.uri) / f"{table_name('p')}.lance" / "data"
    (holder,) = files_with(data, marker.encode())
    leftover = data / f"0{holder.name}"
    shutil.copyfile(holder, leftover)
    await sealed.forget("p", 1)
    await sealed.store.maintain("p", retention=timedelta(0))
    assert files_with(Path(sealed.uri), marker) == [leftover]  # young: may be a write
    sealed.store.orphan_age = timedelta(0)
    report = await sealed.store.maintain("p", retention=timedelta(0))
    assert report is not None and report.orphans_removed == 1
    assert files_with(Path(sealed.uri), marker.encode()) == []
    await sealed.remember("p", "fact 3")
    await sealed.maintain("p")  # versions within retention keep their files
    assert [it.text for it in await sealed.list("p")] == [f"fact {i}" for i in range(4)]
    fresh = await open_memory(Path(sealed.uri), sealed.embedder)  # reads every file anew
    assert len(await fresh.list("p")) == 4
    await fresh.store.close()


async def test_compaction_slower_than_half_the_orphan_age_does_not_commit(
    sealed: Memory
) -> None:
    """A compaction whose first files are older than half the orphan age by commit time could
    meet another replica's sweep: it discards its files instead of committing them."""
    for i in range(4):
        await sealed.remember("p", f"fact {i}")
    data = Path(sealed.uri) / f"{table_name('p')}.lance" / "data"
    before = sorted(f.name for f in data.iterdir())
    sealed.store.orphan_age = timedelta(microseconds=2)  # every compaction is too slow
    report = await sealed.store.maintain("p")
    assert report is not None and not report.compacted
    assert sorted(f.name for f in data.iterdir()) == before  # its rewritten files are gone
    sealed.store.orphan_age = timedelta(minutes=10)
    report = await sealed.store.maintain("p")
    assert report is not None and report.compacted
    assert [it.text for it in await sealed.list("p")] == [f"fact {i}" for i in range(4)]


async def test_write_restarts_when_another_replica_cleans_its_version(tmp_path: Path) -> None:
    """A write decided on a version that another replica's maintenance compacts and removes
    (zero retention) before the commit is a lost race: it starts again on the latest version
    and commits, instead of failing on the removed files."""
    emb = HashingEmbedder()
    mine, other = (Store(str(tmp_path), dim=emb.dim, model_id=emb.model_id,
                         version_retention=timedelta(0), tail_rows=1) for _ in range(2))
    await mine.open()
    await other.open()
    memory = Memory(mine, emb)
    for i in range(3):
        await memory.remember("p", f"fact {i}")
    await memory.forget("p", 1)  # a deletion for the compaction to materialise
    seen: list[int] = []

    def plan(view: WriteView) -> Mutation:
        seen.append(view.version)
        if len(seen) == 1:  # the other replica maintains the partition meanwhile
            done = threading.Thread(target=lambda: asyncio.run(other.maintain("p")))
            done.start()
            done.join()
        ts = now_ms()
        return Mutation(items=[ItemRow(view.hwm + 1, "fact new", emb.embed_batch(["fact new"])[0],
                                       ts, ts, 1)], hwm=view.hwm + 1, result={"n": view.hwm + 1})

    assert await mine.write("p", plan) == {"n": 4}
    # Lance rebases the write over a compaction that left its tail alone, or it starts again.
    assert len(seen) in (1, 2) and seen[-1] >= seen[0]
    assert [it.text for it in await memory.list("p")] == ["fact 1", "fact 2", "fact new"]
    await other.close()
    await mine.close()


async def test_many_small_writes_stay_compact_with_maintenance(sealed: Memory) -> None:
    for i in range(40):
        await sealed.remember("p", f"fact number {i}")
    await sealed.store.maintain("p", retention=timedelta(0))
    table_dir = Path(sealed.uri) / f"{table_name('p')}.lance"
    data_files = list((table_dir / "data").glob("*"))
    assert len(data_files) == 2  # the 39 first writes in one; the last, with the head, alone
    assert len(await sealed.list("p")) == 40


async def test_a_compaction_without_the_heads_fragment_survives_the_next_write(
        sealed: Memory) -> None:
    """Planned without the fragment that holds the head, a compaction commits after a write
    that landed between its plan and its commit (with it, Lance refuses the commit)."""
    for i in range(10):
        await sealed.remember("p", f"fact number {i}")
    uri = str(Path(sealed.uri) / f"{table_name('p')}.lance")
    ds = lance.dataset(uri)
    (head,) = head_fragment(ds)
    plan = Compaction.plan(ds, {"target_rows_per_fragment": FRAGMENT_ROWS,
                                "excluded_fragment_ids": [head]})
    assert plan.num_tasks() == 1
    rewrites = [task.execute(ds) for task in plan.tasks]
    await sealed.remember("p", "a write between plan and commit")
    Compaction.commit(ds, rewrites)
    assert len(lance.dataset(uri).get_fragments()) == 3  # the ten's, the old head's, the new
    assert [it.n for it in await sealed.list("p")] == list(range(1, 12))


async def _compact_beside_writes(memory: Memory, start: int) -> tuple[Any, int]:
    """A routine compaction of "p" while one client keeps remembering; its report and how
    many writes landed meanwhile."""
    done, during = asyncio.Event(), 0

    async def writer() -> None:
        nonlocal during
        while not done.is_set():
            await memory.remember("p", f"fact number {start + during}")
            during += 1

    async def compact() -> Any:
        try:
            return await memory.store.maintain("p", purge=False)
        finally:
            done.set()

    _, report = await asyncio.gather(writer(), compact())
    return report, during


async def test_routine_compaction_commits_beside_a_stream_of_writes(
        sealed: Memory, caplog: pytest.LogCaptureFixture) -> None:
    """Every write moves the head row; compaction leaves the head's fragment alone, so it
    commits while writes go on instead of losing to each of them."""
    written, landed = 0, 0
    caplog.set_level(logging.INFO, logger="semmem.store")
    for _ in range(10):  # until writes landed during a compaction (a busy machine may be slow)
        for _ in range(40):
            await sealed.remember("p", f"fact number {written}")
            written += 1
        report, during = await _compact_beside_writes(sealed, written)
        written += during
        assert report is not None and report.compacted
        assert "did not commit" not in caplog.text
        landed = max(landed, during)
        if during >= 2:
            break
    assert landed >= 2, "no write landed while a compaction ran, in ten rounds"
    assert len(await sealed.list("p")) == written


async def test_maintenance_prunes_expired_operation_records(memory: Memory) -> None:
    from semmem.memory import Operation

    memory.idempotency_ttl_ms = -10_000  # records expire at once
    await memory.remember("p", "x", op=Operation.of("op", "remember", {"text": "x"}, None))
    assert len((await memory.snapshot("p")).ops) == 1
    report = await memory.store.maintain("p", retention=timedelta(0))
    assert report is not None and report.ops_pruned == 1
    assert (await memory.snapshot("p")).ops == {}


async def test_open_with_other_model_is_refused(tmp_path: Path) -> None:
    mem = await open_memory(tmp_path, HashingEmbedder(dim=64, model_id="model-a"))
    await mem.remember("p", "x")
    other = Store(str(tmp_path), dim=64, model_id="model-b")
    with pytest.raises(ModelMismatch, match="semmem reindex"):
        await other.open()


async def test_reindex_moves_store_to_new_model(tmp_path: Path) -> None:
    old = await open_memory(tmp_path, HashingEmbedder(dim=64, model_id="model-a"))
    await old.remember("p", "alpha fact")
    await old.remember("p", "beta fact")
    new_embedder = HashingEmbedder(dim=32, model_id="model-b")
    store = Store(str(tmp_path), dim=32, model_id="model-b")
    await store.open(check_model=False)
    mem = Memory(store, new_embedder)
    assert await mem.reindex("p") == 2
    await store.set_meta({"schema": 1, "model": "model-b", "dim": 32})
    fresh = await open_memory(tmp_path, new_embedder)
    snap = await fresh.store.snapshot("p")
    assert {it.model for it in snap.items} == {"model-b"} and snap.vectors.shape == (2, 32)
    assert (await fresh.search("p", "alpha", 1))["items"][0]["n"] == 1


async def test_schema_one_table_is_migrated_and_still_detects_duplicates(tmp_path: Path) -> None:
    import lance

    mem = await open_memory(tmp_path, HashingEmbedder())
    await mem.remember("p", "Alice likes   green tea")
    await mem.remember("p", "Bob runs on Mondays")
    uri = str(tmp_path / f"{table_name('p')}.lance")
    lance.dataset(uri).drop_columns(["dkey"])  # what a schema-1 store holds
    assert "dkey" not in lance.dataset(uri).schema.names
    fresh = await open_memory(tmp_path, HashingEmbedder())
    result = await fresh.remember("p", "alice LIKES green tea")
    assert result == {"status": "stored", "n": 1, "count": 2, "existing": True}
    assert "dkey" in lance.dataset(uri).schema.names
    assert (await fresh.remember("p", "Carmen sails"))["n"] == 3
    report = await fresh.import_("p", [{"text": "BOB runs on mondays"}, {"text": "new one"}])
    assert (report.imported, report.duplicates) == (1, 1)
    assert [it.n for it in await fresh.list("p")] == [1, 2, 3, 4]


async def test_schema_one_table_read_then_written_with_a_new_text(tmp_path: Path) -> None:
    """A snapshot read before the first write migrates the table is not committed on: the
    write used to fail (503, the old layout's tail has no ``dkey``)."""
    await older_table(tmp_path, ["Alice likes tea"], ["dkey", "tags"])  # schema 1
    fresh = await open_memory(tmp_path, HashingEmbedder())
    try:
        assert "1. Alice likes tea" in (await fresh.recall("p", "tea", 100)).text
        assert (await fresh.remember("p", "Bob likes coffee"))["n"] == 2
        assert [it.n for it in await fresh.list("p")] == [1, 2]
    finally:
        await fresh.close()
