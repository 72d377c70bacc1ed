"""The rolling-tail commit against Lance itself: what its compare-and-swap rests on.

Numbers are unique only because Lance refuses the second of two commits decided on one version
that both touch the tail; these tests fail if a Lance upgrade starts rebasing such a commit.
They also cover tables whose head sits where older code left it.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.commit import CommitConflictError
from lance.optimize import Compaction

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store, table_name
from semmem.store.commit.tail import Layout, commit, layout_of, tail_limit
from semmem.store.rows import KIND_HEAD
from semmem.store.schema import partition_schema
from tests.support.memory import open_memory

DIM = 64


def _head(ds: lance.LanceDataset, seq: int, hwm: int) -> pa.Table:
    head = ds.to_table(filter=f"kind = {KIND_HEAD}")
    return head.set_column(head.schema.get_field_index("seq"), "seq",
                           pa.array([seq], pa.int64())).set_column(
        head.schema.get_field_index("n"), "n", pa.array([hwm], pa.int64())
    ).cast(partition_schema(DIM))


async def _table(tmp_path: Path, facts: int) -> tuple[Memory, str]:
    memory = await open_memory(tmp_path / "db", HashingEmbedder())
    for i in range(facts):
        await memory.remember("p", f"fact {i}")
    return memory, str(tmp_path / "db" / f"{table_name('p')}.lance")


def _layout(ds: lance.LanceDataset) -> Layout:
    return layout_of(ds, ds.to_table(with_row_address=True), partition_schema(DIM),
                     tail_limit(DIM))


async def test_two_commits_decided_on_one_version_conflict(tmp_path: Path) -> None:
    memory, uri = await _table(tmp_path, 3)
    schema = partition_schema(DIM)
    first, second = lance.dataset(uri), lance.dataset(uri)
    version = first.version
    commit(first, _layout(first), _head(first, 4, 3), schema, tail_limit(DIM), 3,
           lambda names: None)
    discarded: list[str] = []
    with pytest.raises(CommitConflictError):
        commit(second, _layout(second), _head(second, 4, 3), schema, tail_limit(DIM), 3,
               discarded.extend)
    assert lance.dataset(uri).version == version + 1
    assert len(discarded) == 1  # the loser's new tail: removed, no version references it
    await memory.close()


async def test_a_compaction_that_leaves_the_tail_alone_is_rebased_over(tmp_path: Path) -> None:
    emb = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=emb.dim, model_id=emb.model_id, tail_rows=1)
    await store.open()
    memory = Memory(store, emb)
    for i in range(4):
        await memory.remember("p", f"fact {i}")
    uri = str(tmp_path / "db" / f"{table_name('p')}.lance")
    ds = lance.dataset(uri)
    layout = _layout(ds)
    other = lance.dataset(uri)  # another replica's maintenance, between decision and commit
    plan = Compaction.plan(other, {"excluded_fragment_ids": [layout.tail_id]})
    assert plan.num_tasks() == 1
    Compaction.commit(other, [task.execute(other) for task in plan.tasks])
    new, after = commit(ds, layout, _head(ds, 5, 4), partition_schema(DIM), 1, 4,
                        lambda names: None)
    assert after is None and new.version > ds.version + 1  # rebased: read it again
    assert [it.n for it in await memory.list("p")] == [1, 2, 3, 4]
    await memory.close()


@pytest.mark.parametrize("how", ["one fragment", "merge_insert"])
async def test_a_table_whose_head_sits_in_a_large_fragment_is_written_on(
        tmp_path: Path, how: str) -> None:
    """The head where older code left it — inside a fragment of every row (an overwrite, a
    whole compaction) or beside a deletion (``merge_insert`` deleted the old head row) — is
    deleted by address; the write's own fragment is the tail from then on."""
    memory, uri = await _table(tmp_path, 40)
    await memory.close()
    ds = lance.dataset(uri)
    rows = ds.to_table()
    if how == "one fragment":
        lance.write_dataset(rows, uri, mode="overwrite")
    else:
        head = _head(ds, 41, 40)
        ds.merge_insert("key").when_matched_update_all().when_not_matched_insert_all() \
            .execute(head)
    memory = await open_memory(tmp_path / "db", HashingEmbedder())
    for i in range(3):
        assert (await memory.remember("p", f"new fact {i}"))["n"] == 41 + i
    items = await memory.list("p")
    assert [it.n for it in items] == list(range(1, 44))
    table = lance.dataset(uri).to_table(columns=["key"])
    assert len(table) == len(set(table.column("key").to_pylist()))  # one row per key
    fresh = await open_memory(tmp_path / "db", HashingEmbedder())
    assert [it.n for it in await fresh.list("p")] == list(range(1, 44))
    await fresh.close()
    await memory.close()
