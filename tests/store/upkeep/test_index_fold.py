"""Past the threshold, maintenance folds the unindexed tail into the vector index only once it
passes the fold bound; until then the rows are searched exactly beside the index. An index of an
older kind keeps answering, and its next fold builds the current kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.rows import table_name
from semmem.store.upkeep.indexes import VECTOR_INDEX, VECTOR_KIND, fold_bound


async def _indexed(path: Path, fold_rows: int) -> Memory:
    embedder = HashingEmbedder()
    store = Store(str(path), dim=embedder.dim, model_id=embedder.model_id, index_threshold=50)
    store.upkeep.fold_rows, store.upkeep.fold_fraction = fold_rows, 1.0
    await store.open()
    memory = Memory(store, embedder, index_candidates=30)
    await memory.import_("p", [{"text": f"base fact {i} on subject{i % 9}"} for i in range(120)])
    report = await store.maintain("p", purge=False)
    assert report is not None and report.indexed == "built"
    return memory


def _dataset(path: Path) -> Any:
    return lance.dataset(str(path / f"{table_name('p')}.lance"))


def _unindexed(path: Path) -> int:
    return int(_dataset(path).stats.index_stats(VECTOR_INDEX)["num_unindexed_rows"])


def test_the_bound_is_a_share_of_the_index_up_to_a_cap() -> None:
    assert fold_bound(60, 5_000) == 0  # a small index: every pass folds
    assert fold_bound(100_000, 5_000) == 1_000
    assert fold_bound(1_000_000, 5_000) == 5_000


async def test_a_pass_folds_the_tail_only_once_it_passes_the_bound(tmp_path: Path) -> None:
    memory = await _indexed(tmp_path, fold_rows=20)
    assert _unindexed(tmp_path) == 0
    await memory.import_("p", [{"text": f"tail fact {i} zebra{i}"} for i in range(10)])
    report = await memory.store.maintain("p", purge=False)
    assert report is not None and report.indexed == ""  # under the bound: left unindexed
    assert _unindexed(tmp_path) >= 10
    # searched exactly beside the index meanwhile
    assert (await memory.recall("p", "tail fact 7 zebra7", 200)).text.startswith(
        "128. tail fact 7 zebra7")
    await memory.import_("p", [{"text": f"more tail {i} quartz{i}"} for i in range(15)])
    report = await memory.store.maintain("p", purge=False)
    assert report is not None and report.indexed == "updated"
    assert _unindexed(tmp_path) == 0
    assert (await memory.recall("p", "more tail 3 quartz3", 200)).text.startswith(
        "134. more tail 3 quartz3")


async def test_an_index_of_an_older_kind_answers_and_its_next_fold_builds_the_current_kind(
    tmp_path: Path,
) -> None:
    memory = await _indexed(tmp_path, fold_rows=5)
    _dataset(tmp_path).create_index("vector", "IVF_FLAT", name=VECTOR_INDEX, metric="cosine",
                                    num_partitions=10, replace=True)  # as older code built it
    kinds = {i.name: i.index_type for i in _dataset(tmp_path).describe_indices()}
    assert kinds[VECTOR_INDEX] == "IVF_FLAT" and kinds["key_idx"] == "BTree"
    await memory.remember("p", "walrus umbrella lantern")
    assert (await memory.recall("p", "walrus umbrella lantern", 200)).text.startswith(
        "121. walrus umbrella lantern")
    assert (await memory.recall("p", "base fact 40 subject4", 200)).text.startswith(
        "41. base fact 40 on subject4")
    await memory.import_("p", [{"text": f"newer {i}"} for i in range(10)])
    report = await memory.store.maintain("p", purge=False)
    assert report is not None and report.indexed == "built"
    kinds = {i.name: i.index_type for i in _dataset(tmp_path).describe_indices()}
    assert kinds[VECTOR_INDEX] == VECTOR_KIND and kinds["key_idx"] == "BTree"
    assert _unindexed(tmp_path) == 0
    assert (await memory.recall("p", "walrus umbrella lantern", 200)).text.startswith(
        "121. walrus umbrella lantern")
