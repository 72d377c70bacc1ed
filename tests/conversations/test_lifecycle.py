"""Pieces under every lifecycle rule, on a real store: retention hides and sweeps them (and an
expired piece is no longer a stored message), a delete by filter covers them (their ``ts`` is
the message's time), a backup restores them with their record fields, ``check`` passes, and
the model's tools see and forget them by number."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.items import parse_iso
from semmem.items.address import Address
from semmem.items.filters import Filter
from semmem.keyed.items import Keyed
from semmem.lifecycle.backup import create_backup
from semmem.lifecycle.backup_restore import restore_backup
from semmem.lifecycle.sweep import sweep
from semmem.memory import Memory
from semmem.store import Store
from semmem.store.copies.objects import Objects

S1 = Address.of(SESSION, "s1")


def said(role: str, text: str, at: str) -> Message:
    return Message(role, text, parse_iso(at))


CHAT = [said("user", "I adopted a cat named Miso.", "2023-01-10T09:00:00Z"),
        said("assistant", "Miso is a lovely name.", "2023-01-10T09:01:00Z"),
        said("user", "Miso now sleeps on my desk.", "2023-03-02T18:00:00Z")]


async def test_retention_hides_expired_pieces_sweeps_them_and_no_resend_brings_them_back(
        memory: Memory) -> None:
    talk = Conversations(memory)
    first = await talk.ingest("p", S1, CHAT)
    await memory.retention.set("p", "1s")
    # age counts from the last write: ingest wrote them now, so they expire a second later
    deadline = time.monotonic() + 10
    while (await memory.search("p", "Miso"))["count"]:
        assert time.monotonic() < deadline, "the pieces never expired"
        await asyncio.sleep(0.05)
    assert await Keyed(memory).pieces("p", S1) == []
    # expired, not yet swept: the whole history sent again stores nothing of it
    assert (await talk.ingest("p", S1, CHAT))["items"] == [[], [], []]
    assert await sweep(memory, ["p"]) == {"p": [n for ns in first["items"] for n in ns]}
    await memory.retention.set("p", "never")
    again = await talk.ingest("p", S1, [*CHAT, said("user", "Miso is two.", "2023-04-01")])
    assert again["items"] == [[], [], [], [4]]  # swept: still gone; only the new message
    assert [it.text for it in await Keyed(memory).pieces("p", S1)] == ["Miso is two."]


LONG = " ".join(f"Sentence {i} of a long message about the garden." for i in range(8))


async def test_a_forgotten_piece_is_never_stored_again_by_a_resend_whole_or_in_part(
        memory: Memory) -> None:
    talk = Conversations(memory)
    chat = [*CHAT, said("user", LONG, "2023-03-03T10:00:00Z")]
    first = await talk.ingest("p", S1, chat)
    one, two, three, long = first["items"]
    assert len(long) == 2  # the long message is two pieces
    await memory.forget("p", one[0], owner=False)  # the only piece of a message
    await memory.forget("p", long[0])  # one piece of two
    again = await talk.ingest("p", S1, chat)
    assert again["items"] == [[], two, three, long[1:]]
    assert (await memory.snapshot("p")).hwm == 5  # nothing numbered anew
    # the session forgotten whole (the owner's door): nothing of it comes back either
    from semmem.conversations.sessions import Sessions

    await Sessions(memory).forget("p", "s1")
    assert (await talk.ingest("p", S1, chat))["items"] == [[], [], [], []]
    assert (await memory.snapshot("p")).count == 0
    assert (await memory.check("p")).problems == []  # the ledger is a record like any
    # another session may say the same: its own message
    other = await talk.ingest("p", Address.of(SESSION, "s2"), chat[:1])
    assert other["items"] == [[6]]


async def test_a_forgotten_session_leaves_its_id_in_no_file_and_no_replay_names_its_numbers(
        memory: Memory) -> None:
    from semmem.conversations.sessions import Sessions
    from semmem.rules import Operation
    from tests.support.files import decoded_with

    sid = "alice-divorce-lawyer-7"
    session = Address.of(SESSION, sid)
    talk = Conversations(memory)
    op = Operation.of("op-alice", "ingest", {"sessionId": sid}, None)
    first = await talk.ingest("p", session, CHAT, op=op)
    assert first["items"] == [[1], [2], [3]] and first["sessionId"] == sid
    root = Path(memory.uri)
    assert decoded_with(root, sid)  # positive control: the pieces name it
    await Sessions(memory).forget("p", sid)
    await memory.purge("p")
    assert decoded_with(root, sid) == []  # nor the idempotency record, nor the ledger
    again = await talk.ingest("p", session, CHAT, op=op)  # a replay: the numbers are gone
    assert again["items"] == [[], [], []] and again["sessionId"] == sid


async def test_a_delete_by_filter_covers_pieces_by_their_messages_time(memory: Memory) -> None:
    await Conversations(memory).ingest("p", S1, CHAT)
    await memory.remember("p", "an ordinary fact")
    january = Filter.parse({"ts": {"lt": "2023-02-01T00:00:00Z"}})
    gone = await memory.forget_matching("p", january)
    assert gone == [1, 2]
    left = await memory.list("p")
    assert [it.text for it in left] == ["Miso now sleeps on my desk.", "an ordinary fact"]
    assert left[0].piece == {"session": "s1", "role": "user", "at": "2023-03-02T18:00:00.000Z",
                             "message": 2, "part": 0}
    assert left[1].piece is None


async def test_the_models_tools_find_and_forget_a_piece_by_number(memory: Memory) -> None:
    talk = Conversations(memory)
    first = await talk.ingest("p", S1, CHAT)
    found = await memory.search("p", "where does Miso sleep")
    assert found["items"][0]["sessionId"] == "s1" and found["items"][0]["role"] == "user"
    n = first["items"][2][0]
    await memory.forget("p", n, owner=False)
    assert [it.n for it in await Keyed(memory).pieces("p", S1)] == [1, 2]
    recall = await memory.recall("p", "Miso", 1024)
    assert "desk" not in recall.text and "Miso" in recall.text
    # updated by the model, a piece keeps its place in its session
    await memory.update("p", 1, "I adopted a cat named Miso in January.", owner=False)
    item = await memory.get("p", 1)
    assert item is not None and item.piece is not None and item.piece["message"] == 0


async def test_a_backup_restores_pieces_with_their_places(memory: Memory, tmp_path: Path
                                                          ) -> None:
    await Conversations(memory).ingest("p", S1, CHAT)
    target = Objects(str(tmp_path / "backups"))
    manifest = await create_backup(memory.store, target)
    fresh = Store(str(tmp_path / "restored"), dim=memory.embedder.dim,
                  model_id=memory.embedder.model_id)
    await fresh.open()
    await restore_backup(target, manifest.id, fresh)
    restored = Memory(fresh, memory.embedder)
    try:
        pieces = await Keyed(restored).pieces("p", S1)
        assert [(it.text, it.piece, it.ts) for it in pieces] == [
            (it.text, it.piece, it.ts) for it in await Keyed(memory).pieces("p", S1)]
        # another store keys other digests: the session still knows its messages
        again = await Conversations(restored).ingest("p", S1, CHAT)
        assert again["count"] == 3 and again["items"] == [[1], [2], [3]]
        assert (await restored.check("p")).problems == []
    finally:
        await fresh.close()
