"""Recall under a filter (a token's scope): only the facts it covers, on a small partition and
an indexed one; edits outside the scope are not found."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.errors import NotFound
from semmem.scoped.filters import Filter
from tests.support.memory import small_indexed_memory


@pytest.mark.parametrize("indexed", [False, True], ids=["small", "indexed"])
async def test_a_filtered_recall_shows_only_the_facts_it_covers(tmp_path: Path,
                                                                indexed: bool) -> None:
    memory = await small_indexed_memory(tmp_path / "db")
    store = memory.store
    try:
        size = 120 if indexed else 12
        await memory.import_("p", [
            {"text": f"tea note {i} about topic{i % 4}",
             "metadata": {"agent": ["support", "sales"][i % 2]}} for i in range(size)])
        if indexed:
            await memory.maintain("p")
        assert (await store.read_view("p")).indexed is indexed
        scope = Filter.parse({"metadata": {"agent": "support"}})
        support = {it.n for it in await memory.list("p", filter=scope)}
        unscoped = await memory.recall("p", "tea note topic1", 4096)
        assert {int(s["id"]) for s in unscoped.sources} - support  # control: others are recalled
        for text in ("tea note topic1", None):
            got = await memory.recall("p", text, 4096, filter=scope)
            numbers = [int(s["id"]) for s in got.sources]
            assert numbers and set(numbers) <= support, text
        none = await memory.recall("p", "tea", 4096, filter=Filter.parse(
            {"metadata": {"agent": "nobody"}}))
        assert none.sources == [] and none.text == ""
        other = min(set(range(1, size + 1)) - support)
        with pytest.raises(NotFound):
            await memory.forget("p", other, scope=scope)
        with pytest.raises(NotFound, match=f"^item {other} does not exist"):
            await memory.update("p", other, "changed", scope=scope)
        assert (await memory.get("p", other)) is not None
    finally:
        await memory.close()
