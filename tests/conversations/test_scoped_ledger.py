"""The ledger is per scope and per session (issue 60, item 3), over a real server with two
scoped tokens: what scope `red` forgot in a session neither blocks scope `blue`'s ingest of the
same message into that session nor is revealed to it, and stays forgotten for `red` — also
when the unscoped owner did the forgetting."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.server import JSON, TOKEN, ServerProcess, served_with_tokens_file
from tests.support.web import result_of, send, send_as, tool

RED = "red-scope-token-0000000"
BLUE = "blue-scope-token-000000"
TOKENS = "\n".join([TOKEN, f"{RED} scope.team=red", f"{BLUE} scope.team=blue"])
M = {"role": "user", "content": "The spare key is under the blue flowerpot.",
     "at": "2024-03-01T09:00:00Z"}
OTHER = {"role": "user", "content": "The alarm code changes every Monday.",
         "at": "2024-03-01T09:01:00Z"}


@pytest.fixture(scope="module")
def c(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    server: ServerProcess
    with served_with_tokens_file(tmp_path_factory.mktemp("ledger"), TOKENS) as server, \
            server.client() as client:
        yield client


def _ingest(c: httpx.Client, token: str, op: str, *messages: dict[str, Any]) -> list[list[int]]:
    payload = {"version": 1, "operationId": op, "partition": "p", "sessionId": "S",
               "messages": list(messages)}
    r = send(c, payload, {"Authorization": f"Bearer {token}", **JSON}, path="/ingest")
    assert r.status_code == 200, r.text
    items: list[list[int]] = r.json()["items"]
    return items


def _texts(c: httpx.Client, token: str) -> list[str]:
    found = result_of(send_as(c, token, tool("search", {"query": "key flowerpot alarm"},
                                             partition="p")))
    return sorted(it["text"] for it in found["items"])


def test_what_red_forgot_neither_blocks_nor_is_revealed_to_blue(c: httpx.Client) -> None:
    [[red_n]] = _ingest(c, RED, "red-1", M)
    assert _texts(c, RED) == [M["content"]]
    result_of(send_as(c, RED, tool("forget", {"n": red_n}, partition="p")))
    assert _texts(c, RED) == []
    assert _ingest(c, RED, "red-2", M) == [[]]  # forgotten stays forgotten for red

    [[blue_n]] = _ingest(c, BLUE, "blue-1", M)  # blue stores it: red's forget is red's
    assert blue_n != red_n and _texts(c, BLUE) == [M["content"]]
    assert _texts(c, RED) == []  # and red still sees nothing of it
    assert _ingest(c, RED, "red-3", M) == [[]]

    # blue's own forget holds for blue, and red's ledger is unchanged by it
    result_of(send_as(c, BLUE, tool("forget", {"n": blue_n}, partition="p")))
    assert _ingest(c, BLUE, "blue-2", M) == [[]]


def test_the_owners_forget_of_a_red_piece_keeps_it_forgotten_for_red_only(
        c: httpx.Client) -> None:
    [[red_n]] = _ingest(c, RED, "red-o1", OTHER)
    result_of(send_as(c, TOKEN, tool("forget", {"n": red_n}, partition="p")))
    assert _ingest(c, RED, "red-o2", OTHER) == [[]]
    [[blue_n]] = _ingest(c, BLUE, "blue-o1", OTHER)
    assert blue_n > red_n
