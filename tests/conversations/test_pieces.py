"""The cutter: pieces on sentence boundaries, about the target size, never over the limit,
slices of the message (nothing changed or lost), deterministic; and the record fields a piece
carries (checked on import)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from semmem.conversations.pieces import MAX_CHARS, TARGET_CHARS, clean_piece, cut
from semmem.errors import InvalidArguments

# The LongMemEval-S questions' folder, when this machine has it (benchmarks/data_sets.py).
DATA = Path(os.environ.get("SEMMEM_LONGMEMEVAL", "") or "/nonexistent")


def covers(text: str, pieces: list[str]) -> bool:
    """Every piece is a slice of ``text``, in order, and together they hold all of it but
    whitespace between them."""
    at = 0
    for piece in pieces:
        found = text.find(piece, at)
        if found < 0 or text[at:found].strip():
            return False
        at = found + len(piece)
    return not text[at:].strip()


def test_a_short_message_is_one_piece_and_blank_is_none() -> None:
    assert cut("  I got an air fryer.  ") == ["I got an air fryer."]
    assert cut(" \n\t ") == []


def test_a_long_message_is_cut_on_sentence_ends_into_even_pieces() -> None:
    sentences = [f"Sentence number {i} says something about topic {i % 5}." for i in range(40)]
    text = " ".join(sentences)
    pieces = cut(text)
    assert covers(text, pieces) and len(pieces) >= len(text) // MAX_CHARS
    assert all(p.endswith(".") for p in pieces)  # never inside a sentence
    assert all(TARGET_CHARS * 0.5 <= len(p) <= MAX_CHARS for p in pieces)
    assert cut(text) == pieces  # deterministic


def test_a_sentence_over_the_limit_is_cut_at_clauses_then_words_then_anywhere() -> None:
    clauses = ", ".join(f"clause {i} goes on a little" for i in range(60)) + "."
    pieces = cut(clauses)
    assert covers(clauses, pieces) and all(len(p) <= MAX_CHARS for p in pieces)
    assert all(p.endswith((",", ".")) for p in pieces)
    words = " ".join(["word"] * 500)
    assert all(len(p) <= MAX_CHARS and not p.startswith(" ") for p in cut(words))
    blob = "x" * (3 * MAX_CHARS + 100)  # no boundary at all
    assert [len(p) for p in cut(blob)] == [MAX_CHARS, MAX_CHARS, MAX_CHARS, 100]


def test_line_breaks_are_boundaries_and_a_short_tail_joins_the_piece_before() -> None:
    text = ("First paragraph with enough words to matter here. " * 6 + "\n\nThanks!")
    pieces = cut(text)
    assert covers(text, pieces) and pieces[-1].endswith("Thanks!")
    assert not any(p == "Thanks!" for p in pieces)


@pytest.mark.skipif(not DATA.is_dir(), reason="the LongMemEval dev split is not here")
def test_a_real_haystack_gives_pieces_a_1kb_budget_holds_several_of() -> None:
    question = json.loads(sorted(DATA.glob("*.json"))[0].read_text())
    sizes = []
    for session in question["haystack_sessions"]:
        for turn in session:
            pieces = cut(turn["content"])
            assert covers(turn["content"], pieces)
            sizes += [len(p.encode()) for p in pieces]
    assert max(sizes) <= 4 * MAX_CHARS and sum(sizes) / len(sizes) < TARGET_CHARS


def test_a_piece_record_field_is_checked_when_imported() -> None:
    good = {"role": "user", "at": "2023-05-20T10:00:00Z", "message": 3, "part": 0,
            "digest": "ab12"}
    assert clean_piece(good)["at"] == "2023-05-20T10:00:00.000Z"
    for bad in ({**good, "message": -1}, {**good, "part": True}, {**good, "at": "soon"},
                {**good, "digest": "XYZ"}, {**good, "extra": 1}, {"role": "user"}, "piece"):
        with pytest.raises(InvalidArguments):
            clean_piece(bad)
