"""The filtered columns' scalar indexes are built with a partition's other indexes."""

from __future__ import annotations

from pathlib import Path

from semmem.items.filters import Filter
from semmem.store.files import open_dataset
from semmem.store.schema import LIVE_ITEMS
from tests.support.memory import small_indexed_memory


async def test_an_indexed_partition_answers_a_filter_from_its_indexes_alone(
        tmp_path: Path) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    store = memory.store
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
        assert {"tags_idx", "ts_idx", "updated_idx", "kind_idx", "forgotten_idx"} <= set(kinds)
        assert "label" in kinds["tags_idx"].lower(), kinds
        assert "bitmap" in kinds["kind_idx"].lower(), kinds
        ds = open_dataset(uri, store.storage_options)
        for raw in ({"metadata": {"user": "u1"}}, {"updated": {"gte": "2026-01-01T00:00:00Z"}},
                    {"ts": {"lt": "2030-01-01T00:00:00Z"}, "metadata": {"user": "u2"}}):
            plan = ds.scanner(filter=f"{LIVE_ITEMS} AND {Filter.parse(raw).where()}",
                              columns=[], with_row_id=True).explain_plan()
            # every clause from an index: no column of the selected rows is read to refine it
            assert "ScalarIndexQuery" in plan and "refine_filter=--" in plan, plan
        got = await memory.search("p", "fact", 50, filter=Filter.parse(
            {"metadata": {"user": "u1"}}))
        assert got["count"] == 27 and len(got["items"]) == 27
    finally:
        await memory.close()
