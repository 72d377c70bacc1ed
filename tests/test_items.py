"""Structured records: notes, surfacing status, merge, and the slug-keyed map import."""

from __future__ import annotations

import pytest

from semmem.errors import InvalidArguments
from semmem.memory import Memory


async def test_recall_renders_note_after_em_dash(memory: Memory) -> None:
    await memory.remember("p", "Knee injury", attrs={"note": "resolved in 2021"})
    assert (await memory.recall("p", None, 100)).text == "1. Knee injury — resolved in 2021"


async def test_recall_note_line_is_whole_at_byte_boundary(memory: Memory) -> None:
    await memory.remember("p", "Café visit", attrs={"note": "très bien ☕"})
    line = "1. Café visit — très bien ☕"
    size = len(line.encode())
    assert (await memory.recall("p", None, size)).text == line
    assert (await memory.recall("p", None, size - 1)).text == ""  # never cut mid-note


@pytest.mark.parametrize("attrs", [
    {"status": "inactive"}, {"status": "resolved"}, {"surfacing": "hold"}, {"mergedInto": 2},
    {"mergedInto": None},
])
async def test_unsurfaced_items_are_never_recalled(memory: Memory, attrs: dict) -> None:  # type: ignore[type-arg]
    await memory.remember("p", "hidden knee fact")
    await memory.remember("p", "visible knee fact")
    await memory.update("p", 1, attrs=attrs)
    surfaced = attrs == {"mergedInto": None}  # clearing a field surfaces again
    for query in (None, "knee fact"):
        ids = [s["id"] for s in (await memory.recall("p", query, 1000)).sources]
        assert ("1" in ids) is surfaced and "2" in ids


async def test_unsurfaced_items_do_not_eat_budget(memory: Memory) -> None:
    await memory.remember("p", "a" * 40, attrs={"status": "inactive"})
    await memory.remember("p", "b" * 40)
    assert (await memory.recall("p", None, 43)).text == "2. " + "b" * 40


async def test_search_shows_record_fields_of_hidden_items(memory: Memory) -> None:
    await memory.remember("p", "knee injury", attrs={"note": "resolved", "status": "inactive"})
    await memory.remember("p", "knee surgery")
    await memory.update("p", 2, attrs={"mergedInto": 1, "surfacing": "hold"})
    found = {it["n"]: it for it in (await memory.search("p", "knee", 10))["items"]}
    assert found[1]["note"] == "resolved" and found[1]["status"] == "inactive"
    assert found[2]["mergedInto"] == 1 and found[2]["surfacing"] == "hold"
    assert "slug" not in found[1]


async def test_update_record_fields_keeps_text_and_clears_with_none(memory: Memory) -> None:
    await memory.remember("p", "fact")
    await memory.update("p", 1, attrs={"note": "n1", "status": "active"})
    await memory.update("p", 1, attrs={"note": None})
    (item,) = await memory.list("p")
    assert (item.text, item.attrs, item.revision) == ("fact", {"status": "active"}, 3)


@pytest.mark.parametrize("attrs", [{"note": "x" * 501}, {"color": "red"}, {"status": 3}])
async def test_bad_record_fields_are_refused(memory: Memory, attrs: dict) -> None:  # type: ignore[type-arg]
    await memory.remember("p", "fact")
    with pytest.raises(InvalidArguments):
        await memory.update("p", 1, attrs=attrs)


async def test_record_fields_round_trip_through_export_import(memory: Memory) -> None:
    await memory.remember("p", "one", attrs={"note": "ñ note", "status": "inactive",
                                             "slug": "one"})
    await memory.remember("p", "two", attrs={"surfacing": "hold", "mergedInto": 1})
    exported = [r async for r in memory.export("p")]
    await memory.import_("q", exported)
    assert [r async for r in memory.export("q")] == exported








