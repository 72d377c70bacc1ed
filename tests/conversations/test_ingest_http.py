"""``POST /ingest`` on a real ``semmem serve`` process (fake embedder): pieces stored and
recalled with their session, role and time; replays; appends that never store a message twice;
the provider path's tokens and refusals in the contract's envelope."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import (
    AUTH,
    JSON,
    READER,
    SCOPED,
    TOKEN,
    WRITER,
    ServerProcess,
    served_with_tokens_file,
)
from tests.support.web import assert_error, recall, send, tool

LONG = ("I just got an Air Fryer and I love it. " * 4 + "The basket holds four portions. "
        "It preheats in three minutes, which is faster than my oven. " * 6 +
        "Yesterday I made crispy chickpeas, roasted broccoli and salmon fillets in it. " * 3)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server with provider, bound and scoped tokens."""
    with served_with_tokens_file(tmp_path_factory.mktemp("ingest")) as process:
        yield process


@pytest.fixture
def c(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def body(partition: str, session: str, messages: list[dict[str, Any]], op: str = "op-1",
         **extra: Any) -> dict[str, Any]:
    return {"version": 1, "operationId": op, "partition": partition, "sessionId": session,
            "messages": messages, **extra}


def ingest(c: httpx.Client, payload: Any, token: str = TOKEN) -> httpx.Response:
    return send(c, payload, {"Authorization": f"Bearer {token}", **JSON}, path="/ingest")


def msg(role: str, content: str, at: str | None = "2023-05-20T10:00:00Z") -> dict[str, Any]:
    return {"role": role, "content": content, **({"at": at} if at else {})}


def test_ingest_stores_each_message_as_pieces_that_recall_and_search_show(
        c: httpx.Client) -> None:
    r = ingest(c, body("p-basic", "s1", [msg("user", LONG),
                                         msg("assistant", "Enjoy your new air fryer!")]))
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["status"] == "stored" and answer["sessionId"] == "s1"
    first, second = answer["items"]
    assert len(first) > 2 and len(second) == 1  # a long message in several pieces
    assert answer["count"] == len(first) + 1
    assert first == list(range(first[0], first[0] + len(first)))
    found = send(c, tool("search", {"query": "air fryer chickpeas", "limit": 50},
                         partition="p-basic")).json()["result"]
    pieces = {e["n"]: e for e in found["items"]}
    assert set(pieces) == set(first) | set(second)
    assert all(len(e["text"]) <= 640 for e in pieces.values())
    assert pieces[second[0]]["role"] == "assistant"
    assert pieces[first[0]] | {"sessionId": "s1", "role": "user",
                               "at": "2023-05-20T10:00:00.000Z"} == pieces[first[0]]
    joined = " ".join(pieces[n]["text"] for n in first)
    assert joined.split() == LONG.split()  # nothing lost or changed, in order
    text = send(c, recall("what did I cook in the air fryer?", partition="p-basic")
                ).json()["text"]
    assert "chickpeas" in text


def test_a_replay_answers_the_first_result_and_a_changed_body_is_a_mismatch(
        c: httpx.Client) -> None:
    payload = body("p-replay", "s1", [msg("user", "I live in Lisbon.")], op="op-r")
    first = ingest(c, payload)
    again = ingest(c, payload)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    changed = ingest(c, body("p-replay", "s1", [msg("user", "I live in Porto.")], op="op-r"))
    assert_error(changed, 409, "idempotency_mismatch")
    assert send(c, tool("search", {"query": "live"}, partition="p-replay")
                ).json()["result"]["count"] == 1


def test_appending_to_a_session_never_stores_a_message_twice(c: httpx.Client) -> None:
    one = [msg("user", "My dog is called Rex."), msg("assistant", "Rex is a fine name.")]
    first = ingest(c, body("p-append", "s1", one, op="a1")).json()
    both = ingest(c, body("p-append", "s1", [*one, msg("user", "Rex turned five today.")],
                          op="a2")).json()
    assert both["items"][:2] == first["items"]
    assert both["items"][2][0] > max(n for ns in first["items"] for n in ns)
    assert both["count"] == 3
    # the same content twice in one call: stored once, both answered with its numbers
    twice = ingest(c, body("p-append", "s1", [msg("user", "Thanks!"), msg("user", "Thanks!")],
                           op="a3")).json()
    assert twice["items"][0] == twice["items"][1] and twice["count"] == 4
    # another session holds its own copy; another role is another message
    other = ingest(c, body("p-append", "s2", [msg("user", "Thanks!"),
                                              msg("assistant", "Thanks!")], op="a4")).json()
    assert other["count"] == 6


def test_a_message_with_no_text_is_taken_and_stores_nothing(c: httpx.Client) -> None:
    """A blank or null content (an assistant turn that only called a tool) answers ``[]``; the
    rest of the conversation is stored, and the empty message is neither a line nor a piece."""
    turns = [msg("user", "Book the table at Luigi's for eight."), msg("assistant", "   "),
             {"role": "assistant", "content": None, "at": "2023-05-20T10:00:00Z"},
             msg("assistant", "Booked: Luigi's, eight people, 7 pm.")]
    stored = ingest(c, body("p-blank", "s1", turns, op="b1")).json()
    assert stored["items"][1:3] == [[], []] and stored["count"] == 2
    assert all(len(stored["items"][i]) == 1 for i in (0, 3))
    again = ingest(c, body("p-blank", "s1", turns, op="b2")).json()
    assert again["items"] == stored["items"] and again["count"] == 2
    found = send(c, tool("search", {"query": "Luigi's table", "limit": 10},
                         partition="p-blank")).json()["result"]["items"]
    assert sorted(e["n"] for e in found) == [stored["items"][0][0], stored["items"][3][0]]
    lines = send(c, recall("Luigi's table", partition="p-blank")).json()["text"].splitlines()
    assert len(lines) == 2 and all(line.split("] ", 1)[1].strip() for line in lines)


def test_a_question_naming_a_time_gets_what_was_said_then(c: httpx.Client) -> None:
    """"Two weeks ago" counts from the server's clock: the hike said fourteen days ago comes
    before the one said ninety days ago, which the same question without the date ranks first."""
    now = datetime.now(UTC)
    days = {"s-old": 90, "s-new": 14}
    for session, text in (("s-old", "Alex and I went hiking."),
                          ("s-new", "Sam and I went hiking in the hills all day.")):
        when = (now - timedelta(days=days[session])).strftime("%Y-%m-%dT%H:%M:%SZ")
        ingest(c, body("p-when", session, [msg("user", text, at=when)], op=session))

    def first(question: str) -> str:
        lines = send(c, recall(question, partition="p-when", max_bytes=4096)).json()["text"]
        return lines.splitlines()[0]

    assert "Alex" in first("Who did I go hiking with?")  # the positive control
    assert "Sam" in first("Who did I go hiking with two weeks ago?")
    assert "Alex" in first("Who did I go hiking with a year ago?")  # nothing said then


def test_refusals_use_the_contract_envelope(c: httpx.Client, server: ServerProcess) -> None:
    ok = body("p-refused", "s1", [msg("user", "hello there")])
    assert_error(ingest(c, ok, token="wrong-token-0000000000"), 401, "unauthorized")
    assert_error(ingest(c, ok, token=READER), 403, "forbidden")
    assert_error(ingest(c, {**ok, "partition": "bound"}, token=READER), 403, "forbidden")
    assert_error(ingest(c, ok, token=WRITER), 403, "forbidden")  # bound to another partition
    assert_error(ingest(c, {**ok, "access": "read"}), 403, "forbidden")
    assert_error(ingest(c, {**ok, "version": 2}), 400, "invalid_request")
    assert_error(ingest(c, {**ok, "sessionId": ""}), 400, "invalid_request")
    assert_error(ingest(c, {**ok, "messages": []}), 400, "invalid_request")
    bad = assert_error(ingest(c, {**ok, "messages": [msg("user", "x"), msg("  ", "hi")]}),
                       422, "invalid_arguments")
    assert bad["details"] == {"message": 1}
    assert_error(ingest(c, {**ok, "messages": [msg("user", "x", at="yesterday")]}),
                 422, "invalid_arguments")
    missing = assert_error(ingest(c, {**ok, "messages": [{"role": "user"}]}),
                           422, "invalid_arguments")
    assert "content is required" in missing["message"]
    assert_error(send(c, b"{not json", {**AUTH, **JSON}, path="/ingest"), 400,
                 "invalid_request")
    huge = json.dumps(body("p-refused", "s1", [msg("user", "word " * 900_000)])).encode()
    assert_error(send(c, huge, path="/ingest"), 413, "too_large")
    assert send(c, tool("search", {"query": "hello"}, partition="p-refused")
                ).json()["result"]["count"] == 0


def test_a_bound_token_ingests_into_its_partition_and_a_scoped_one_into_its_scope(
        c: httpx.Client) -> None:
    r = ingest(c, body("bound", "s1", [msg("user", "bound hello")]), token=WRITER)
    assert r.status_code == 200, r.text
    r = ingest(c, body("p-scoped", "s1", [msg("user", "Blue team standup is at nine.")],
                       op="sc"), token=SCOPED)
    assert r.status_code == 200, r.text
    found = send(c, tool("search", {"query": "standup"}, partition="p-scoped")
                 ).json()["result"]["items"]
    assert found[0]["metadata"] == {"team": "blue"}


def test_messages_without_at_are_stamped_with_the_time_of_the_request(
        c: httpx.Client, tmp_path: Path) -> None:
    r = ingest(c, body("p-now", "s1", [msg("user", "no time given", at=None)]))
    assert r.status_code == 200, r.text
    found = send(c, tool("search", {"query": "time"}, partition="p-now")).json()["result"]
    assert found["items"][0]["at"].endswith("Z") and found["items"][0]["at"] >= "2026"


def test_a_resent_conversation_brings_back_no_forgotten_message_nor_does_a_replay(
        c: httpx.Client) -> None:
    from tests.support.server import ADMIN

    chat = [msg("user", "My locker code is 4471."), msg("assistant", "Noted: 4471."),
            msg("user", "It is nowhere."), msg("user", "It is now here.")]
    first = ingest(c, body("p-gone", "s1", chat, op="op-g1")).json()
    one, two, three, four = first["items"]
    assert three != four  # two messages, whatever their whitespace
    r = send(c, tool("forget", {"n": one[0]}, partition="p-gone"))
    assert r.status_code == 200, r.text
    again = ingest(c, body("p-gone", "s1", chat, op="op-g2"))
    assert again.status_code == 200 and again.json()["items"] == [[], two, three, four]
    gone = c.delete("/admin/session", params={"partition": "p-gone", "session": "s1"},
                    headers=ADMIN)
    assert gone.status_code == 200, gone.text
    replay = ingest(c, body("p-gone", "s1", chat, op="op-g1"))  # the first call, again
    assert replay.status_code == 200 and replay.json()["items"] == [[], [], [], []]
    assert ingest(c, body("p-gone", "s1", chat, op="op-g3")).json()["items"] \
        == [[], [], [], []]  # the whole history sent again: nothing of it back


def test_an_ingest_of_blank_messages_alone_creates_no_partition(c: httpx.Client) -> None:
    from tests.support.server import ADMIN

    said = ingest(c, body("p-said", "s1", [msg("user", "Something.")], op="op-said"))
    assert said.status_code == 200
    r = ingest(c, body("p-blank-only", "s1", [msg("user", "  "), {"role": "user", "content": None}],
                       op="op-blank"))
    assert r.status_code == 200 and r.json()["items"] == [[], []], r.text
    listed = c.get("/admin/partitions", headers=ADMIN).json()["partitions"]
    assert "p-said" in listed  # positive control: a write that stored something made one
    assert "p-blank-only" not in listed
