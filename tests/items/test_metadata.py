"""A fact's metadata: its rules, and where it is kept (record fields and the ``tags`` column)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pytest

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidArguments
from semmem.items.metadata import MAX_KEYS, clean_metadata, tag, tags
from semmem.memory import Memory
from semmem.store.rows import table_name
from tests.support.memory import older_table, open_memory


def test_clean_metadata_keeps_scalars_and_makes_integral_floats_ints() -> None:
    assert clean_metadata({"user": "alice", "run": 3.0, "score": 0.5, "ok": True}) == {
        "user": "alice", "run": 3, "score": 0.5, "ok": True}
    assert clean_metadata({}) is None and clean_metadata(None) is None


@pytest.mark.parametrize(("value", "says"), [
    ("not an object", "must be an object"),
    ({"a": {"nested": 1}}, "flat"),
    ({"a": [1, 2]}, "flat"),
    ({"a": None}, "string, number or boolean"),
    ({"a": float("nan")}, "finite"),
    ({"a": 2**60}, r"2\^53"),
    ({"a": "x" * 257}, "256 characters"),
    ({"a": "nul\x00"}, "NUL"),
    ({"a": "\ud800"}, "lone surrogate"),
    ({"": 1}, "keys are"),
    ({"bad key": 1}, "keys are"),
    ({"1abc": 1}, "keys are"),
    ({"user\n": 1}, "keys are"),  # `$` alone also matches before a final line break
    ({f"k{i}": i for i in range(MAX_KEYS + 1)}, "at most 16"),
    ({f"k{i}": "x" * 200 for i in range(12)}, "2048 bytes"),
])
def test_clean_metadata_refuses_what_breaks_its_rules(value: Any, says: str) -> None:
    with pytest.raises(InvalidArguments, match=says) as info:
        clean_metadata(value)
    assert info.value.code == "invalid_arguments"


def test_a_tag_tells_types_apart_but_not_integral_floats() -> None:
    assert tag("n", 1) == tag("n", 1.0)
    assert tag("n", 1) != tag("n", True) != tag("n", "1")
    assert tags({"b": 1, "a": "x"}) == sorted([tag("a", "x"), tag("b", 1)])


async def test_remember_and_update_keep_metadata_on_the_item(memory: Memory) -> None:
    n = (await memory.remember("p", "Alice likes tea", metadata={"user": "alice"}))["n"]
    assert (await memory.get("p", n)).metadata == {"user": "alice"}  # type: ignore[union-attr]
    await memory.update("p", n, "Alice likes green tea")  # text only: metadata kept
    assert (await memory.get("p", n)).metadata == {"user": "alice"}  # type: ignore[union-attr]
    await memory.update("p", n, metadata={"user": "bob", "run": 2})  # replaced whole
    item = await memory.get("p", n)
    assert item is not None and item.metadata == {"user": "bob", "run": 2}
    assert item.public()["metadata"] == {"user": "bob", "run": 2}
    await memory.update("p", n, metadata={})  # cleared
    item = await memory.get("p", n)
    assert item is not None and item.metadata == {} and "metadata" not in item.public()
    with pytest.raises(InvalidArguments):
        await memory.remember("p", "Bob likes coffee", metadata={"a": {"b": 1}})
    assert len(await memory.list("p")) == 1  # the refused write stored nothing


async def test_tags_column_holds_each_pair_hashed(memory: Memory) -> None:
    await memory.remember("p", "Alice likes tea", metadata={"user": "alice", "run": 1})
    await memory.remember("p", "Bob likes coffee")
    uri = str(Path(memory.uri) / f"{table_name('p')}.lance")
    rows = lance.dataset(uri).to_table(columns=["n", "tags"], filter="kind = 1").to_pylist()
    by_n = {r["n"]: r["tags"] for r in rows}
    assert by_n == {1: tags({"user": "alice", "run": 1}), 2: None}
    assert "alice" not in str(by_n)  # only hashes reach the column


async def test_schema_two_table_reads_as_is_and_migrates_at_its_first_write(
        tmp_path: Path) -> None:
    uri = await older_table(tmp_path, ["Alice likes tea"], ["tags"])  # a schema-2 store's
    before = lance.dataset(uri).version
    fresh = await open_memory(tmp_path, HashingEmbedder())
    try:
        assert "1. Alice likes tea" in (await fresh.recall("p", "tea", 100)).text
        assert (await fresh.search("p", "tea"))["count"] == 1
        assert lance.dataset(uri).version == before  # no migration on a read
        await fresh.remember("p", "Bob likes coffee", metadata={"user": "bob"})
        assert "tags" in lance.dataset(uri).schema.names  # migrated by the first write
        got = await fresh.search("p", "coffee", filter=_flt({"metadata": {"user": "bob"}}))
        assert [e["n"] for e in got["items"]] == [2] and got["count"] == 1
    finally:
        await fresh.close()


def _flt(raw: dict[str, Any]) -> Any:
    from semmem.items.filters import Filter

    return Filter.parse(raw)
