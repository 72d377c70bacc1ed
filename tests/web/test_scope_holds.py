"""A token's scope is part of who is asking, on every path of a real ``semmem serve``: taken
with the token at admission (a tokens file changed mid-body changes nothing), in every
idempotency record, in every "not found" and in deduplication; a scoped read's count is not
the partition's."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.server import ADMIN, TOKEN, ServerProcess
from tests.support.web import recall, result_of, send_as, tool

A = "scoped-token-a-000000"  # a provider token scoped to agent=a
B = "scoped-token-b-000000"  # scoped to agent=b
LINES = f"{A} scope.agent=a\n{B} scope.agent=b\n"


def _start(data: Path, tokens: Path) -> ServerProcess:
    tokens.write_text(LINES)
    tokens.chmod(0o600)
    return ServerProcess(data, env={"SEMMEM_TOOL_METADATA": "1",
                                    "SEMMEM_TOKENS_FILE": str(tokens)}).start().wait_ready()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server: the plain test token, and tokens scoped to agent=a and agent=b."""
    root = tmp_path_factory.mktemp("scope-holds")
    process = _start(root / "db", root / "tokens")
    try:
        yield process
    finally:
        process.stop()


def _remember(c: httpx.Client, partition: str, text: str, agent: str) -> int:
    body = tool("remember", {"text": text, "metadata": {"agent": agent}}, partition=partition)
    return int(result_of(send_as(c, TOKEN, body))["n"])


@pytest.mark.parametrize("change", ["replaced", "deleted"])
def test_a_scope_is_taken_with_the_token_at_admission(tmp_path: Path, change: str) -> None:
    """Revocation failed open: the scope was looked up again after the body was read, so a
    tokens file replaced (or deleted) mid-body ran the request unscoped (200 with another
    scope's fact)."""
    tokens = tmp_path / "tokens"
    server = _start(tmp_path / "db", tokens)
    try:
        with server.client() as c:
            _remember(c, "p", "The vault code is 4417", "b")
            _remember(c, "p", "Likes green tea", "a")
            mine = result_of(send_as(c, A, recall(None, partition="p")))
            assert "green tea" in mine["text"] and "vault" not in mine["text"]  # control
            body = json.dumps(recall(None, partition="p")).encode()
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.sendall(f"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             f"Authorization: Bearer {A}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n".encode()
                             + body[:len(body) // 2])
                if change == "deleted":
                    tokens.unlink()
                else:
                    moved = tmp_path / "tokens.new"
                    moved.write_text(f"{B} scope.agent=b\n")  # A's line is gone
                    moved.chmod(0o600)
                    os.replace(moved, tokens)
                deadline = time.monotonic() + 20
                # the server has read the new file once A is refused on another connection
                while send_as(c, A, recall(None, partition="p")).status_code != 401:
                    assert time.monotonic() < deadline, "the tokens file was not re-read"
                    time.sleep(0.05)
                sock.sendall(body[len(body) // 2:])
                answer = b""
                while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
            assert b"vault" not in answer, answer
            status = int(answer.split(b" ", 2)[1])
            assert status in (200, 401), answer
            if status == 200:  # the scope it was admitted with: its own fact only
                assert b"green tea" in answer
    finally:
        server.stop()


def test_an_operation_id_is_the_callers_within_its_scope(server: ServerProcess) -> None:
    """B sending A's operationId got A's recorded result back (with the ``similar`` text of
    A's fact), and a different body answered 409, telling B the id was used."""
    with server.client() as c:
        result_of(send_as(c, A, tool("remember", {"text": "Keeps the spare key under the blue pot"},
                                     partition="ids")))
        sent = tool("remember", {"text": "Keeps the spare key under the blue pots"},
                    partition="ids", operation_id="shared-op-1")
        first = result_of(send_as(c, A, sent))
        assert "spare key" in json.dumps(first.get("similar"))  # control: A's hint
        assert result_of(send_as(c, A, sent)) == first  # A's own retry replays
        replayed = result_of(send_as(c, B, sent))
        assert "similar" not in replayed and replayed["n"] != first["n"], replayed
        other = tool("remember", {"text": "Something else entirely"}, partition="ids",
                     operation_id="shared-op-1")
        r = send_as(c, B, {**other, "operationId": "shared-op-2"})
        assert r.status_code == 200
        r = send_as(c, A, {**other, "operationId": "shared-op-3"})
        assert r.status_code == 200
        # a different body under an id another scope used is no 409 either
        r = send_as(c, B, {**tool("remember", {"text": "Yet another fact"}, partition="ids"),
                           "operationId": "shared-op-3"})
        assert r.status_code == 200, r.text
        # the record of the scope's own earlier call still refuses a changed body
        r = send_as(c, A, {**tool("remember", {"text": "Yet another fact"}, partition="ids"),
                           "operationId": "shared-op-1"})
        assert r.status_code == 409


def test_not_found_reads_the_same_for_another_scopes_fact(server: ServerProcess) -> None:
    """A scoped forget of another scope's live fact was worded apart from a number never
    given, and with a stale cursor answered 409 there instead of 404."""
    with server.client() as c:
        theirs = _remember(c, "nf", "Theirs to keep", "b")
        _remember(c, "nf", "Mine to keep", "a")
        cursor = result_of(send_as(c, A, recall(None, partition="nf")))["cursor"]
        # the other scope's fact changes after A's recall: its cursor is stale for it
        result_of(send_as(c, B, tool("update", {"n": theirs, "text": "Theirs, changed"},
                                     partition="nf")))
        never = theirs + 1000
        answers = {}
        for name in ("forget", "update"):
            for n in (theirs, never):
                args = {"n": n} if name == "forget" else {"n": n, "text": "x"}
                for given in (None, cursor):
                    r = send_as(c, A, tool(name, args, given, partition="nf"))
                    assert r.status_code == 404, (name, n, given, r.text)
                    error = r.json()["error"]
                    answers[(name, n, given)] = (error["code"], error["message"].replace(
                        str(n), "N"), json.dumps(error.get("details")).replace(str(n), "N"))
            assert answers[(name, theirs, None)] == answers[(name, never, None)] \
                == answers[(name, theirs, cursor)] == answers[(name, never, cursor)], answers


def test_a_scope_dedupes_within_itself(server: ServerProcess) -> None:
    """Once two scopes held one text, a scope's remember of it stored a new copy whenever the
    other scope had written it last."""
    with server.client() as c:
        a1 = result_of(send_as(c, A, tool("remember", {"text": "Walks the dog at seven"},
                                          partition="dd")))
        b1 = result_of(send_as(c, B, tool("remember", {"text": "Walks the dog at seven"},
                                          partition="dd")))
        assert b1["n"] != a1["n"] and "existing" not in b1  # control: scopes apart
        for token, first in ((A, a1), (B, b1), (A, a1)):
            again = result_of(send_as(c, token, tool("remember", {"text": "walks the dog at SEVEN"},
                                                     partition="dd")))
            assert again["n"] == first["n"] and again.get("existing") is True, again
        items = c.get("/admin/items", params={"partition": "dd"}, headers=ADMIN).json()
        assert len(items["items"]) == 2


def _stored(c: httpx.Client) -> float:
    for line in c.get("/metrics").text.splitlines():
        if line.startswith("semmem_items_stored "):
            return float(line.split()[1])
    raise AssertionError("no semmem_items_stored")


def test_a_scoped_or_filtered_count_leaves_the_gauge_alone(tmp_path: Path) -> None:
    """A filtered or scoped search's ``count`` overwrote ``semmem_items_stored`` (5 became 0)."""
    server = _start(tmp_path / "db", tmp_path / "tokens")
    try:
        with server.client() as c:
            for i in range(5):
                _remember(c, "g", f"Gauge fact number {i}", "b")
            assert _stored(c) == 5.0
            found = result_of(send_as(c, A, tool("search", {"query": "gauge"}, partition="g")))
            assert found["count"] == 0
            assert _stored(c) == 5.0
            found = result_of(send_as(c, TOKEN, tool("search", {"query": "gauge", "filter": {
                "metadata": {"agent": "none"}}}, partition="g")))
            assert found["count"] == 0
            assert _stored(c) == 5.0
            found = result_of(send_as(c, TOKEN, tool("search", {"query": "gauge"}, partition="g")))
            assert found["count"] == 5 and _stored(c) == 5.0
    finally:
        server.stop()
