"""``Conversations.ingest`` on a real store: a long session committed in chunks answers every
message, and its replay answers the whole first result; a scope's pieces are stamped and its
dedupe looks only within it."""

from __future__ import annotations

from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import Message
from semmem.conversations.pieces import SESSION
from semmem.items import now_ms
from semmem.items.address import Address
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.rules import Operation

S = Address.of(SESSION, "s")


def says(*texts: str) -> list[Message]:
    return [Message("user", t, now_ms()) for t in texts]


async def test_a_long_session_commits_in_one_write_and_replays_whole(memory: Memory) -> None:
    talk = Conversations(memory)
    msgs = says(*(f"message {i} is here." for i in range(5)))
    op = Operation.of("op-long", "ingest", {"n": 5}, None)
    first = await talk.ingest("p", S, msgs, op=op)
    assert first["items"] == [[1], [2], [3], [4], [5]] and first["count"] == 5
    seq = (await memory.store.snapshot("p")).seq
    assert seq == 1  # one commit, the record with it
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


def test_a_message_held_with_another_stores_digest_is_known_by_its_exact_pieces() -> None:
    # A session imported from another store (whose secret keyed other digests) is known by
    # its role and its pieces' exact texts; one character of whitespace differs: another
    # message.
    from semmem.conversations.ingest import Cut, known
    from semmem.conversations.pieces import cut
    from semmem.items import Item

    text = " ".join(f"On day {i} I walked {i} miles along the river." for i in range(30))
    foreign = "f" * 40  # another store's key id
    held = known([Item(n, t, 0, 0, 1, n, "m", {"piece": {"role": "user", "message": 0,
                                                          "part": n - 1, "digest": foreign}})
                  for n, t in enumerate(cut(text), 1)], lambda item: True,
                 lambda item: True, b"secret")
    again = Cut(Message("user", text, 0), "0" * 40, tuple(cut(text)))
    assert held.find(again) == list(range(1, len(cut(text)) + 1))
    spaced = text.replace("miles along", "miles  along")
    assert held.find(Cut(Message("user", spaced, 0), "1" * 40, tuple(cut(spaced)))) is None
    said_by_other = Cut(Message("assistant", text, 0), "x" * 40, tuple(cut(text)))
    assert held.find(said_by_other) is None


async def test_two_messages_differing_only_in_whitespace_are_two_messages(
        memory: Memory) -> None:
    talk = Conversations(memory)
    first = await talk.ingest("p", S, says("The key is in the drawer; it is nowhere.",
                                           "The key is in the drawer; it is now here."))
    assert first["items"] == [[1], [2]]
    code = "def f(x):\n  return x"
    await talk.ingest("p", S, says(code))
    fixed = await talk.ingest("p", S, says(code.replace("  return", "    return")))
    assert fixed["items"] == [[4]]  # corrected indentation: a new message, stored
    again = await talk.ingest("p", S, says(code, code))
    assert again["items"] == [[3], [3]]  # the same text: the message held


async def test_an_ingest_of_blank_messages_alone_makes_no_partition(memory: Memory) -> None:
    op = Operation.of("op-blank", "ingest", {"n": 2}, None)
    answer = await Conversations(memory).ingest("p", S, says("", "   "), op=op)
    assert answer["items"] == [[], []] and answer["count"] == 0
    assert await memory.partitions() == []
