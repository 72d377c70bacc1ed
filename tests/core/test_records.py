"""Structured records: notes, surfacing status, merge, and the slug-keyed map import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from semmem.errors import InvalidArguments, InvalidInput
from semmem.importing import read_records
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


def test_read_records_map_keyed_by_slug(tmp_path: Path) -> None:
    source = tmp_path / "records.json"
    source.write_text(json.dumps({
        "units": {"label": "Prefers metric units", "why": "engineer", "status": "active"},
        "asthma": {"label": "Has asthma", "why": "resolved", "status": "inactive"},
        "old": {"label": "Lived in Rome", "mergedInto": "units"},
    }))
    records = read_records(source, display_field="label", note_field="why")
    assert records == [
        {"text": "Has asthma", "slug": "asthma", "note": "resolved", "status": "inactive"},
        {"text": "Lived in Rome", "slug": "old", "mergedInto": "units"},
        {"text": "Prefers metric units", "slug": "units", "note": "engineer", "status": "active"},
    ]


def test_read_records_map_without_display_field_names_the_slug(tmp_path: Path) -> None:
    source = tmp_path / "records.json"
    source.write_text(json.dumps({"a": {"text": "x"}, "b": {"title": "y"}}))
    with pytest.raises(InvalidInput, match=r"\['b'\]: no string field 'text'"):
        read_records(source)


def test_read_records_rejects_bad_jsonl_line_before_importing(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    source.write_text('{"text": "fine"}\n{"text": "   "}\n')
    with pytest.raises(InvalidInput, match=r"a.jsonl:2: text must not be empty"):
        read_records(source)


async def test_import_map_then_recall_uses_notes_and_skips(memory: Memory, tmp_path: Path) -> None:
    source = tmp_path / "records.json"
    source.write_text(json.dumps({
        "b-units": {"text": "Prefers metric units", "note": "since school"},
        "a-asthma": {"text": "Has asthma", "status": "inactive"},
    }))
    await memory.import_("p", read_records(source, note_field="note"))
    assert (await memory.recall("p", None, 1000)).text == "2. Prefers metric units — since school"
    assert [r["slug"] async for r in memory.export("p")] == ["a-asthma", "b-units"]
