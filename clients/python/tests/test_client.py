"""``Client`` against a real server: the five verbs, the turn's cursor, errors by code."""

from __future__ import annotations

import time

import pytest

from semmem_client import (
    Client,
    Conflict,
    Forbidden,
    IdempotencyMismatch,
    InvalidArguments,
    InvalidRequest,
    NotFound,
    SemmemError,
    TransportError,
    Unauthorized,
)

from conftest import PATH
from tests.support.server import TOKEN, ServerProcess, free_port


def test_remember_then_recall_in_five_lines(server: ServerProcess, partition: str) -> None:
    """The README's five lines: a stored fact comes back in a recall, with a cursor."""
    with Client(server.url, TOKEN, memory_path=PATH) as memory:
        stored = memory.remember(partition, "Prefers metric units")
        recall = memory.recall(partition, "Prefers metric units", max_bytes=1024)
    assert (stored["status"], stored["n"], stored["count"]) == ("stored", 1, 1)
    assert recall.text == "1. Prefers metric units"
    assert [s["id"] for s in recall.sources] == [1]  # the int update and forget take
    assert recall.cursor


def test_search_update_forget_answer_as_the_server_did(client: Client, partition: str) -> None:
    """Each tool returns the result dict unchanged, ``similar`` and ``forgotten`` included."""
    client.remember(partition, "Lives in Lyon with two cats")
    moved = client.remember(partition, "Moved from Lyon to Paris with two cats")
    found = client.search(partition, "cats", limit=5)
    updated = client.update(partition, 1, "Lives in Paris with two cats")
    forgotten = client.forget(partition, 2)
    assert [s["n"] for s in moved["similar"]] == [1]
    assert found["count"] == 2 and {i["n"] for i in found["items"]} == {1, 2}
    assert (updated["n"], updated["status"]) == (1, "stored")
    assert forgotten == {"status": "stored", "n": 2, "count": 1, "forgotten": True}
    assert client.recall(partition, None).text == "1. Lives in Paris with two cats"


def test_turn_carries_its_cursor_and_a_stale_one_conflicts(client: Client, partition: str
                                                            ) -> None:
    """Tool calls of a turn share its recall's cursor: an edit of an item changed since that
    recall is a ``Conflict`` (409); a new turn recalls again and succeeds."""
    client.remember(partition, "Is vegetarian since 2019")
    turn = client.turn(partition, None)
    assert turn.text == "1. Is vegetarian since 2019" and turn.cursor
    turn.update(1, "Is vegan since 2024")
    with pytest.raises(Conflict) as refused:
        turn.forget(1)
    assert (refused.value.code, refused.value.status, refused.value.details) == (
        "conflict", 409, {"n": 1})
    fresh = client.turn(partition, None)
    assert fresh.forget(1)["forgotten"] is True


def test_refusals_raise_by_code(server: ServerProcess, client: Client, partition: str) -> None:
    """Each refusal is its code's exception with status and details; none is retried."""
    client.remember(partition, "Plays the cello")
    with pytest.raises(NotFound) as missing:
        client.update(partition, 7, "Plays the viola")
    with pytest.raises(InvalidArguments) as blank:
        client.remember(partition, "   ")
    with pytest.raises(IdempotencyMismatch) as reused:
        client.remember(partition, "Plays the piano", operation_id="same-id")
        client.remember(partition, "Plays the harp", operation_id="same-id")
    with Client(server.url, TOKEN, memory_path=PATH, access="read") as reader, \
            pytest.raises(Forbidden) as read_only:
        reader.remember(partition, "Plays the drums")
    with Client(server.url, "wrong", memory_path=PATH) as stranger, \
            pytest.raises(Unauthorized) as unauthorized:
        stranger.recall(partition, None)
    with Client(server.url, TOKEN) as elsewhere, pytest.raises(NotFound) as no_endpoint:
        elsewhere.recall(partition, None)  # the default /memory: not this server's path
    with pytest.raises(InvalidRequest) as bad_budget:
        client.recall(partition, None, max_bytes=0)
    assert (missing.value.status, blank.value.status, reused.value.status) == (404, 422, 409)
    assert blank.value.details["problems"]
    assert isinstance(reused.value, Conflict)
    assert (read_only.value.status, unauthorized.value.status) == (403, 401)
    assert (no_endpoint.value.status, bad_budget.value.code) == (404, "invalid_request")
    assert client.search(partition, "instrument")["count"] == 2  # cello, piano


def test_nothing_listening_is_a_transport_error_after_two_retries(partition: str) -> None:
    """No answer at all: the two retries (250 ms, then 1 s) run, then ``TransportError``."""
    started = time.monotonic()
    with Client(f"http://127.0.0.1:{free_port()}", TOKEN) as nowhere, \
            pytest.raises(TransportError) as failed:
        nowhere.remember(partition, "Never stored")
    assert time.monotonic() - started >= 1.25
    assert failed.value.status is None and isinstance(failed.value, SemmemError)


def test_client_deadline_is_the_envelope_deadline(client: Client, partition: str) -> None:
    """``deadline_s`` sets ``deadlineAt``; a deadline beyond the server's horizon is refused."""
    with Client(client.url, TOKEN, memory_path=PATH, deadline_s=2 * 86400) as late, \
            pytest.raises(InvalidRequest) as refused:
        late.recall(partition, None)
    assert "deadlineAt" in refused.value.message
