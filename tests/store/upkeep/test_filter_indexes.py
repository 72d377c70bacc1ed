"""The filtered columns' scalar indexes are built with a partition's other indexes."""

from __future__ import annotations

from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.scoping import Filter
from semmem.store import Store
from semmem.store.files import open_dataset


async def test_an_indexed_partition_has_a_label_list_on_tags_and_a_btree_on_ts(
        tmp_path: Path) -> None:
    embedder = HashingEmbedder()
    store = Store(str(tmp_path / "db"), dim=embedder.dim, model_id=embedder.model_id,
                  index_threshold=50)
    await store.open()
    memory = Memory(store, embedder, index_candidates=40)
    try:
        await memory.import_("p", [{"text": f"fact {i}", "metadata": {"user": f"u{i % 3}"}}
                                   for i in range(80)])
        uri = await store.conn.uri_of("p")
        assert uri is not None
        before = {i.name for i in open_dataset(uri, store.storage_options).describe_indices()}
        assert "tags_idx" not in before  # positive control: not there below the threshold
        await memory.maintain("p")
        kinds = {i.name: i.index_type for i in
                 open_dataset(uri, store.storage_options).describe_indices()}
        assert {"tags_idx", "ts_idx", "updated_idx"} <= set(kinds), kinds
        assert "label" in kinds["tags_idx"].lower(), kinds
        got = await memory.search("p", "fact", 50, filter=Filter.parse(
            {"metadata": {"user": "u1"}}))
        assert got["count"] == 27 and len(got["items"]) == 27
    finally:
        await memory.close()
