"""Recall with the real bundled model: the relevant fact comes first, noise stays out."""

from __future__ import annotations

from pathlib import Path

import pytest

from semmem.embedding.reference import SentenceTransformerEmbedder
from tests.support.memory import open_memory

UNRELATED = [
    "Has a golden retriever named Biscuit", "Works as a nurse at the city hospital",
    "Allergic to peanuts", "Plays the cello in a community orchestra",
    "Drives a blue 2015 Honda Civic", "Grew up in a small town near Lyon",
    "Is learning Japanese on weekends", "Married to Sam since 2018",
    "Favourite film is Spirited Away", "Runs five kilometres every morning",
    "Keeps a vegetable garden with tomatoes", "Daughter is called Mia and is six",
    "Reads mostly science fiction", "Volunteers at the food bank on Fridays",
    "Owns a vintage record player", "Hates cilantro", "Birthday is on 3 March",
    "Studied chemistry at university", "Supports the local football club",
    "Is saving money for a trip to Iceland",
]


async def test_recall_ranks_unit_preference_first(
    tmp_path: Path, real_embedder: SentenceTransformerEmbedder
) -> None:
    mem = await open_memory(tmp_path, real_embedder)
    await mem.import_("u", [{"text": t} for t in UNRELATED[:10]])
    await mem.remember("u", "Prefers metric units")
    await mem.import_("u", [{"text": t} for t in UNRELATED[10:]])
    result = await mem.recall("u", "which units do I prefer?", 1024)
    assert result.text.split("\n")[0] == "11. Prefers metric units"
    assert result.sources[0]["id"] == "11"
    assert len(result.text.split("\n")) < 10  # the relevance floor keeps most noise out
    assert len(result.text.encode()) <= 1024


async def test_recall_unrelated_query_returns_little_or_nothing(
    tmp_path: Path, real_embedder: SentenceTransformerEmbedder
) -> None:
    mem = await open_memory(tmp_path, real_embedder)
    await mem.import_("u", [{"text": t} for t in UNRELATED])
    result = await mem.recall("u", "quantum chromodynamics lattice gauge theory", 4096)
    assert len(result.sources) <= 2


async def test_search_finds_paraphrase(
    tmp_path: Path, real_embedder: SentenceTransformerEmbedder
) -> None:
    mem = await open_memory(tmp_path, real_embedder)
    await mem.import_("u", [{"text": t} for t in UNRELATED])
    found = await mem.search("u", "what pet do I have?", limit=3)
    assert found["items"][0]["text"] == "Has a golden retriever named Biscuit"


@pytest.mark.model
async def test_recall_real_model_uses_lexical_and_floor(
    tmp_path: Path, real_embedder: SentenceTransformerEmbedder
) -> None:
    mem = await open_memory(tmp_path, real_embedder)
    await mem.import_("u", [{"text": t} for t in [
        "Has a cat named Pixel who needs thyroid pills twice a day",
        "Works as a backend engineer at a logistics start-up",
        "Plays bass in a jazz trio on Thursday nights",
        "Prefers aisle seats on flights",
        "Is learning Italian with a tutor on Tuesday evenings",
    ]])
    result = await mem.recall("u", "remind me to give Pixel her medicine", 4096)
    assert result.sources[0]["id"] == "1"
    assert result.scored[0].lexical == 1.0
    assert len(result.sources) < 5  # the floor leaves some facts out despite the budget
    assert (await mem.recall("u", "What is the capital of Australia?", 4096)).text == ""
