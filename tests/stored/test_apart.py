"""The application's store items apart from the model's memory by construction (issue 59): in
their own store (``semmem/store/apart.py``), so the model's recall, search, counts, numbers and
scores are computed over the model's rows only, whatever the application keeps; and a
partition's erasure leaves no byte of it in either store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from semmem.embedding.fakes import HashingEmbedder
from semmem.memory import Memory
from semmem.stored.items import Put, StoreItems
from tests.support.files import decoded_with

FACTS = [
    "Alice drinks green tea every morning.",
    "Alice prefers oolong tea in the afternoon.",
    "Alice's favourite tea shop is in Kyoto.",
    "Alice brews tea at 80 degrees.",
    "Alice dislikes tea bags.",
    "Alice collects tea cups.",
]
BATCH = 1000  # items per put (one write each)


async def crowd(memory: Memory, namespace: tuple[str, ...], how_many: int) -> None:
    """``how_many`` application items about the model's topic, in a few batched puts."""
    items = StoreItems(memory)
    for start in range(0, how_many, BATCH):
        await items.put_many(namespace, [
            Put(f"k{i}", {"i": i}, (f"Alice drinks tea, note {i}: green tea in the morning.",),
                None) for i in range(start, min(start + BATCH, how_many))])


async def test_four_thousand_application_items_leave_the_models_recall_and_search(
        memory: Memory) -> None:
    for fact in FACTS:
        await memory.remember("alice", fact)
    await crowd(memory, ("alice",), 4000)
    app = await memory.application()
    assert (await app.read_view("alice")).count == 4000  # the positive control: they are there
    recalled = await memory.recall("alice", "What tea does Alice drink?", 2000)
    assert sorted(line.split(". ", 1)[1] for line in recalled.lines) == sorted(FACTS)
    found = await memory.search("alice", "green tea in the morning", 10)
    assert found["count"] == 6 and len(found["items"]) == 6
    assert {it["text"] for it in found["items"]} == set(FACTS)
    assert (await memory.remember("alice", "Alice also likes coffee."))["n"] == 7  # its own


async def test_a_thousand_application_items_leave_a_blank_recall(memory: Memory) -> None:
    for fact in FACTS:
        await memory.remember("alice", fact)
    await crowd(memory, ("alice",), 1000)
    recalled = await memory.recall("alice", None, 2000)  # newest first
    assert [line.split(". ", 1)[1] for line in recalled.lines] == list(reversed(FACTS))


async def test_the_models_score_does_not_move_with_the_applications_items(
        memory: Memory) -> None:
    await memory.remember("zoo", "The quokka lives on Rottnest Island.")
    for fact in ("Penguins nest on the beach.", "The zoo opens at nine.",
                 "Kangaroos graze at dusk.", "Wombats dig burrows."):
        await memory.remember("zoo", fact)
    before = await memory.search("zoo", "quokka", 5)
    assert before["items"][0]["text"].startswith("The quokka")
    items = StoreItems(memory)
    await items.put_many(("zoo",), [Put(f"q{i}", {"i": i}, (f"quokka note {i}",), None)
                                    for i in range(30)])
    assert len(await items.search(("zoo",), "quokka", {}, 50, 0)) == 30  # they are there
    after = await memory.search("zoo", "quokka", 5)
    assert after == before  # same items, same scores, same count


async def test_deleting_a_partition_leaves_no_byte_in_either_store(memory: Memory) -> None:
    name = "erase-apart-4d2e"
    fact = "erase-fact-marker-91c3 is a fact of the model"
    secret = "erase-value-marker-5b7f"
    await memory.remember(name, fact)
    items = StoreItems(memory)
    await items.put((name,), "profile", {"ssn": secret}, [f"{secret} index text"], None)
    await memory.remember("kept", "another fact")
    await items.put(("kept",), "k", {"v": 1}, ["kept value"], None)
    root = Path(memory.uri)
    for marker in (name, fact, secret):  # the positive control: each is in some file
        assert decoded_with(root, marker), marker
    assert decoded_with(root / "application", secret)  # the value is in the other store
    assert await memory.delete_partition(name)
    for core in await memory.cores():
        await core.store.maintain_registry(retention=timedelta(0))
    for marker in (name, fact, secret):
        assert decoded_with(root, marker) == [], marker
    assert await StoreItems(memory).get(("kept",), "k") is not None
    assert (await memory.recall("kept", None, 2000)).lines == ["1. another fact"]


async def test_on_object_storage_the_applications_store_is_a_prefix_beside(
        fake_embedder: HashingEmbedder) -> None:
    """``s3://bucket/prefix``: the application's store is ``s3://bucket/prefix/application``
    (its own registry and tables, the same storage options), and a partition's delete leaves
    no object of it under either."""
    from tests.support.moto import moto_s3, objects, options

    with moto_s3("semmem-apart") as endpoint:
        memory = await Memory.open("s3://semmem-apart/db", fake_embedder,
                                   storage_options=options(endpoint))
        try:
            await memory.remember("alice", "Alice keeps bees")
            items = StoreItems(memory)
            await items.put(("alice",), "k", {"hives": 2}, ["two hives of bees"], None)
            assert (await items.get(("alice",), "k")) is not None
            keys = objects(endpoint, "semmem-apart", "db/")
            assert any(k.startswith("db/application/_semmem.lance/") for k in keys)
            assert any(k.startswith("db/application/p_") for k in keys)
            assert await memory.delete_partition("alice")
            assert await items.get(("alice",), "k") is None
            assert (await memory.recall("alice", None, 2000)).lines == []
        finally:
            await memory.close()
