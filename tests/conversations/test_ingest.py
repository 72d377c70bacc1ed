"""``Conversations.ingest`` on a real store: a long session committed in chunks answers every
message, and its replay answers the whole first result; a scope's pieces are stamped and its
dedupe looks only within it."""

from __future__ import annotations

from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.items import now_ms
from semmem.keyed.address import Address
from semmem.memory import Memory
from semmem.rules import Operation
from semmem.scoped.filters import Filter

S = Address.of(SESSION, "s")


def says(*texts: str) -> list[Message]:
    return [Message("user", t, now_ms()) for t in texts]


async def test_a_session_past_the_chunk_size_commits_in_chunks_and_replays_whole(
        memory: Memory) -> None:
    talk = Conversations(memory, chunk_pieces=2)
    msgs = says(*(f"message {i} is here." for i in range(5)))
    op = Operation.of("op-long", "ingest", {"n": 5}, None)
    first = await talk.ingest("p", S, msgs, op=op)
    assert first["items"] == [[1], [2], [3], [4], [5]] and first["count"] == 5
    seq = (await memory.store.snapshot("p")).seq
    assert seq == 3  # 2 + 2 + 1 pieces: three commits
    assert await talk.ingest("p", S, msgs, op=op) == first
    assert (await memory.store.snapshot("p")).seq == seq  # a replay writes nothing
    again = await talk.ingest("p", S, msgs)  # no operation id: known messages, nothing new
    assert again["items"] == first["items"]


async def test_a_scoped_ingest_stamps_its_scope_and_dedupes_within_it(memory: Memory) -> None:
    blue, red = (Filter.parse({"metadata": {"team": t}}) for t in ("blue", "red"))
    talk = Conversations(memory)
    one = await talk.ingest("p", S, says("Standup at nine."), scope=blue)
    two = await talk.ingest("p", S, says("Standup at nine."), scope=red)
    assert one["items"] != two["items"]  # red cannot see blue's message: its own copy
    found = await memory.search("p", "standup", filter=red)
    assert [e["metadata"] for e in found["items"]] == [{"team": "red"}]
    again = await talk.ingest("p", S, says("Standup at nine."), scope=blue)
    assert again["items"] == one["items"]


async def test_a_bulk_import_takes_a_message_with_no_text_and_stores_nothing_for_it(
        memory: Memory) -> None:
    talk = Conversations(memory)
    other = Address.of(SESSION, "t")
    results = await talk.ingest_many("p", [(S, says("Lunch at noon.", "", "See you there.")),
                                           (other, says(""))])
    assert [r["items"] for r in results] == [[[1], [], [2]], [[]]]
    assert results[-1]["count"] == 2
    assert (await memory.store.snapshot("p")).count == 2


def test_a_message_held_in_pieces_cut_another_way_is_still_known() -> None:
    # A session restored or imported from a store whose cutter made other pieces (and whose
    # secret keyed other digests) still knows the message by its characters.
    from semmem.conversations.ingest import Cut, known
    from semmem.conversations.pieces import cut
    from semmem.items import Item

    text = " ".join(f"On day {i} I walked {i} miles along the river." for i in range(30))
    before = cut(text, 360, 640, 80)
    assert before != cut(text)  # the cutters differ: otherwise this shows nothing
    held = known([Item(n, t, 0, 0, 1, n, "m", {"piece": {"role": "user", "message": 0,
                                                          "part": n - 1}})
                  for n, t in enumerate(before, 1)], lambda item: True)
    again = Cut(Message("user", text, 0), "another-stores-digest", tuple(cut(text)))
    assert [held[k] for k in again.keys if k in held] == [list(range(1, len(before) + 1))]
    other = Cut(Message("user", text + " And back.", 0), "x", tuple(cut(text + " And back.")))
    assert not any(k in held for k in other.keys)
    said_by_other = Cut(Message("assistant", text, 0), "x", tuple(cut(text)))
    assert not any(k in held for k in said_by_other.keys)
