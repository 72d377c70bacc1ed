"""The model learns nothing from the numbers it may not use (issue 59, item 2), on a real
``semmem serve`` over ``/memory`` and MCP: its ``update``/``forget`` of a number never given
and of its own forgotten fact answer one 404 with one wording and the same details, and the
application's store items (live, replaced or deleted meanwhile) leave no gap in the model's
numbers. The cursor rule stays
where it means something: the model's own fact forgotten after its cursor is a 409."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.mcp import http_client, ok
from tests.support.server import AUTH, JSON, TOKEN, WRITER, ServerProcess, served_with_tokens_file
from tests.support.web import recall, send, tool

EDITS = (("forget", {}), ("update", {"text": "The model's new text."}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with served_with_tokens_file(tmp_path_factory.mktemp("oracle")) as process:
        yield process


@pytest.fixture
def c(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def store(c: httpx.Client, *ops: dict[str, Any]) -> list[Any]:
    """A ``POST /store`` batch's results, as the application (the provider token)."""
    r = send(c, {"ops": list(ops)}, {"Authorization": f"Bearer {TOKEN}", **JSON},
             path="/store")
    assert r.status_code == 200, r.text
    found: list[Any] = r.json()["results"]
    return found


def put(partition: str, key: str, value: Any, *texts: str) -> dict[str, Any]:
    return {"op": "put", "namespace": [partition], "key": key, "value": value,
            **({"index": list(texts)} if texts else {})}


def call(c: httpx.Client, partition: str, name: str, args: dict[str, Any],
         cursor: str | None = None) -> httpx.Response:
    """A model's tool call through the provider endpoint."""
    return send(c, tool(name, args, cursor, partition=partition), {**AUTH, **JSON})


def given(c: httpx.Client, partition: str, text: str) -> int:
    """The number the model's ``remember`` of ``text`` answers."""
    r = call(c, partition, "remember", {"text": text})
    assert r.status_code == 200, r.text
    n: int = r.json()["result"]["n"]
    return n


@dataclass
class Numbers:
    """What one partition's history gave out: the model's live facts, its fact forgotten
    after the cursor, the application's pieces (live, replaced, deleted) and the last
    number the model was given."""

    live: set[int]
    forgotten: int
    pieces: set[int]
    latest: int = 0


def before_cursor(c: httpx.Client, partition: str) -> Numbers:
    """The model's facts and the application's items as they stand at the cursor."""
    first = given(c, partition, "Ines keeps bees on the roof.")
    kept = store(c, put(partition, "kept", {"v": 1}, "The application's kept text one.",
                        "The application's kept text two."))[0]["items"]
    deleted = store(c, put(partition, "gone", {"v": 2}, "The application's deleted text."))
    second = given(c, partition, "Ines cycles to the market.")
    third = given(c, partition, "Ines reads crime novels.")
    return Numbers({first, second}, third, {*kept, *deleted[0]["items"]})


def after_cursor(c: httpx.Client, partition: str, numbers: Numbers) -> Numbers:
    """The changes after the cursor: the model forgets its third fact, the application
    deletes one item and replaces the other (its old pieces become tombstones), and the
    model remembers once more (its latest number)."""
    r = call(c, partition, "forget", {"n": numbers.forgotten})
    assert r.status_code == 200, r.text
    store(c, put(partition, "gone", None))  # a null value deletes the item
    replaced = store(c, put(partition, "kept", {"v": 3}, "The application's replaced text."))
    numbers.pieces |= set(replaced[0]["items"])
    latest = given(c, partition, "Ines grows tomatoes.")
    numbers.live.add(latest)
    numbers.latest = latest
    return numbers


def signature(n: int, status: int, body: dict[str, Any]) -> str:
    """A refusal with ``n`` taken out of it: two refusals with one signature say the same."""
    text = json.dumps(body, sort_keys=True).replace(f"item {n} ", "item N ")
    return f"{status} " + text.replace(f'"n": {n}', '"n": "N"')


def http_refusal(c: httpx.Client, partition: str, n: int, cursor: str | None) -> set[str]:
    """The signatures of the model's ``forget`` and ``update`` of ``n`` over ``/memory``."""
    found = set()
    for name, args in EDITS:
        r = call(c, partition, name, {"n": n, **args}, cursor)
        assert r.status_code != 200, r.text
        found.add(f"{name} " + signature(n, r.status_code, r.json()))
    return found


def unusable(numbers: Numbers) -> list[int]:
    """Every number up to a few past the latest that is not one of the model's live facts."""
    return [n for n in range(1, numbers.latest + 4) if n not in numbers.live]


def test_every_unusable_number_answers_alike_over_memory(c: httpx.Client) -> None:
    """Without a cursor, a number never given and the model's forgotten fact's answer one
    404 with one wording and ``{"n": n}``; with a cursor the model's fact forgotten since is
    a 409, and every other number the same 404."""
    partition = "oracle"
    numbers = before_cursor(c, partition)
    r = send(c, recall(None, partition=partition))
    assert r.status_code == 200, r.text
    cursor = r.json()["cursor"]
    numbers = after_cursor(c, partition, numbers)
    # The application's pieces are numbered in its own store (``store/apart.py``): the model's
    # numbers run on without a gap for them, so a ``remember`` tells nothing of its writes.
    assert numbers.pieces
    assert sorted(numbers.live | {numbers.forgotten}) == list(range(1, numbers.latest + 1))
    answers = {n: http_refusal(c, partition, n, None) for n in unusable(numbers)}
    assert len(set(map(frozenset, answers.values()))) == 1, answers
    one = answers[numbers.latest + 3]
    assert {s.split(" ", 2)[1] for s in one} == {"404"}
    assert all('"code": "not_found"' in s and "item N does not exist in this memory" in s
               and '"details": {"n": "N"}' in s for s in one), one
    stale = http_refusal(c, partition, numbers.forgotten, cursor)
    assert {s.split(" ", 2)[1] for s in stale} == {"409"}  # the cursor rule still holds
    rest = {n: http_refusal(c, partition, n, cursor) for n in unusable(numbers)
            if n != numbers.forgotten}
    assert set(map(frozenset, rest.values())) == {frozenset(one)}, rest


def mcp_signature(n: int, result: types.CallToolResult) -> str:
    """A tool error over MCP with ``n`` taken out (structured content and text)."""
    assert result.is_error
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    return signature(n, 0, {"structured": result.structured_content, "text": texts})


async def mcp_refusals(url: str, numbers: list[int]) -> dict[int, set[str]]:
    """Each number's MCP refusals, in a new session (no recall: no cursor): its edits' and
    its resource read's."""
    out: dict[int, set[str]] = {}
    async with http_client(url, WRITER) as client:
        for n in numbers:
            out[n] = {f"{name} " + mcp_signature(n, await client.call_tool(name, {"n": n, **a}))
                      for name, a in EDITS}
            with pytest.raises(MCPError) as refused:
                await client.read_resource(f"semmem://items/{n}")
            error = refused.value.error
            out[n].add("read " + signature(n, error.code, {"message": error.message,
                                                          "data": error.data}))
    return out


async def test_every_unusable_number_answers_alike_over_mcp(server: ServerProcess,
                                                            c: httpx.Client) -> None:
    """The same over MCP (a token bound to the partition): one tool error for every number
    the model may not use; after a session's recall, its own fact forgotten since conflicts."""
    partition, url = "bound", server.url + "/mcp"
    numbers = before_cursor(c, partition)
    async with http_client(url, WRITER, "legacy") as client:  # a session keeps a cursor
        ok(await client.call_tool("recall", {"text": "Ines"}))  # this session's cursor
        numbers = after_cursor(c, partition, numbers)
        stale = await client.call_tool("forget", {"n": numbers.forgotten})
        assert stale.is_error and isinstance(stale.structured_content, dict)
        assert stale.structured_content["error"]["code"] == "conflict"
        rest = {n: {f"{name} " + mcp_signature(n, await client.call_tool(name, {"n": n, **a}))
                    for name, a in EDITS}
                for n in unusable(numbers) if n != numbers.forgotten}
    answers = await mcp_refusals(url, unusable(numbers))
    assert len(set(map(frozenset, answers.values()))) == 1, answers
    one = {s for s in answers[numbers.latest + 3] if not s.startswith("read ")}
    assert all('"code": "not_found"' in s and "item N does not exist in this memory" in s
               for s in one), one
    assert set(map(frozenset, rest.values())) == {frozenset(one)}, rest
