"""One tool dispatcher for every protocol: the same writes give the same results over the HTTP
provider, ``/mcp`` and ``semmem mcp`` (stdio), ``accepted`` where reads can lag included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.mcp import http_client, ok, stdio_client, stdio_params
from tests.support.server import AUTH, TOKEN, ServerProcess, served
from tests.support.web import tool

LAG = {"SEMMEM_READ_CONSISTENCY_MS": "1000"}
# The same turn on every surface: a new fact, its duplicate, an edit, a forget.
TURN: list[tuple[str, dict[str, Any]]] = [
    ("remember", {"text": "Prefers metric units"}),
    ("remember", {"text": "prefers  metric units"}),
    ("remember", {"text": "Lives in Lyon"}),
    ("remember", {"text": "Lives in Lyon with two cats"}),
    ("update", {"n": 2, "text": "Lives in Paris"}),
    ("forget", {"n": 1}),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server whose reads may lag by a second (as across replicas)."""
    data = tmp_path_factory.mktemp("dispatch") / "db"
    tokens = f"{TOKEN},mcp-token-0000000 partition=over-mcp"
    with served(data, {"SEMMEM_TOKENS": tokens, **LAG}) as process:
        yield process


def _over_http(server: ServerProcess) -> list[dict[str, Any]]:
    results = []
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for name, args in TURN:
            r = c.post("/memory", json=tool(name, args, partition="over-http"), headers=AUTH)
            assert r.status_code == 200, r.text
            results.append(r.json()["result"])
    return results


async def test_a_turn_gives_the_same_results_over_http_and_mcp(server: ServerProcess,
                                                              tmp_path: Path) -> None:
    over_http = _over_http(server)
    async with http_client(server.url + "/mcp", "mcp-token-0000000") as client:
        over_mcp = [ok(await client.call_tool(name, args)) for name, args in TURN]
    async with stdio_client(stdio_params(tmp_path / "db", "over-stdio", **LAG)) as client:
        over_stdio = [ok(await client.call_tool(name, args)) for name, args in TURN]
    assert over_http == over_mcp == over_stdio
    assert [r["status"] for r in over_http] == ["accepted"] * len(TURN)
    assert over_http[1] == {"status": "accepted", "n": 1, "count": 1, "existing": True}
    assert [s["n"] for s in over_http[3]["similar"]] == [2]  # the same hints on every surface


def test_a_replayed_write_answers_byte_for_byte(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        def send(text: str) -> bytes:
            body = tool("remember", {"text": text}, partition="replays")
            body["operationId"] = "replayed-op"
            r = c.post("/memory", json=body, headers=AUTH)
            assert r.status_code == 200, r.text
            return r.content

        c.post("/memory", json=tool("remember", {"text": "Lives in Lyon"}, partition="replays"),
               headers=AUTH)
        first = send("Lives in Lyon with two cats")
        assert b'"similar"' in first
        assert send("Lives in Lyon with two cats") == first


async def test_mcp_tool_descriptions_promise_what_writes_answer(tmp_path: Path) -> None:
    async with stdio_client(stdio_params(tmp_path / "db", "lagging", **LAG)) as client:
        tools = {t.name: t.description or "" for t in (await client.list_tools()).tools}
    for name in ("remember", "update", "forget"):
        assert "status 'accepted'" in tools[name]
        assert "status 'stored'" not in tools[name]
