"""Import files: JSONL records and slug-keyed maps of records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semmem.errors import InvalidInput
from semmem.importing import read_records
from semmem.memory import Memory
from semmem.protocol.jsonio import jsonl_line
from tests.support.server import REPO


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


def test_a_time_outside_years_1_to_9999_is_refused_at_its_line(tmp_path: Path) -> None:
    source = tmp_path / "a.jsonl"
    for bad in ('"ts": 10000000000000000000', '"updated": -62135596800001',
                '"ts": "0001-01-01T00:00:00+01:00"', '"expiresAt": "9999-12-31T23:59:59-01:00"',
                '"keyed": {"space": "session", "key": "s"}, "piece": {"role": "user", '
                '"at": "9999-12-31T23:59:59-01:00", "message": 0, "part": 0}'):
        source.write_text('{"text": "fine", "ts": -62135596800000}\n'
                          f'{{"text": "fine", {bad}}}\n')
        with pytest.raises(InvalidInput, match=r"a.jsonl:2: .* must be .*9999"):
            read_records(source)


def test_import_of_a_deeply_nested_line_is_one_clear_error(tmp_path: Path) -> None:
    """`semmem import` of a line nested 100,000 deep prints one error line, no traceback."""
    source = tmp_path / "deep.jsonl"
    source.write_text('{"text": "fine"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InvalidInput, match=r"deep.jsonl:2: nested too deeply to read"):
        read_records(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    done = subprocess.run(
        [sys.executable, "-m", "semmem.cli", "import", "-p", "p", str(source), "--data",
         str(tmp_path / "db")], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"error: {source}:2: nested too deeply to read"], done.stderr


async def test_import_map_then_recall_uses_notes_and_skips(memory: Memory, tmp_path: Path) -> None:
    source = tmp_path / "records.json"
    source.write_text(json.dumps({
        "b-units": {"text": "Prefers metric units", "note": "since school"},
        "a-asthma": {"text": "Has asthma", "status": "inactive"},
    }))
    await memory.import_("p", read_records(source, note_field="note"))
    assert (await memory.recall("p", None, 1000)).text == "2. Prefers metric units — since school"
    assert [r["slug"] async for r in memory.export("p")] == ["a-asthma", "b-units"]


# Texts as a fact may hold them (no NUL, no lone surrogate, not blank), line breaks of every
# kind drawn often: each is what an export writes and what `semmem import` must read back.
_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_texts = st.text(alphabet=st.one_of(
    st.sampled_from(_BREAKS),
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    min_size=1, max_size=60).filter(lambda t: t.strip() != "")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(_texts, min_size=1, max_size=8))
def test_exported_lines_import_as_the_same_texts(texts: list[str]) -> None:
    records = [{"n": i + 1, "text": t, "note": t, "metadata": {"k": t[:256]}}
               for i, t in enumerate(texts)]
    exported = "".join(jsonl_line(r) for r in records)
    assert len(exported.splitlines()) == len(records)  # one record a line, whatever splits
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "export.jsonl"
        source.write_text(exported, encoding="utf-8")
        assert read_records(source) == records
        # a file written elsewhere, NEL and U+2028/9 raw: still one record a "\n"
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                          encoding="utf-8")
        assert read_records(source) == records


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e309"])
def test_an_import_line_with_a_non_finite_merge_target_is_refused(tmp_path: Path,
                                                                  value: str) -> None:
    """Every later strict write of an Infinity fails (search, the admin item, export)."""
    source = tmp_path / "a.jsonl"
    source.write_text('{"text": "fine"}\n{"text": "merged", "mergedInto": ' + value + "}\n")
    with pytest.raises(InvalidInput, match=r"a.jsonl:2: mergedInto must be a finite number"):
        read_records(source)
