"""MCP sessions on a real server: a cap per token, an idle timeout, cursors kept per token
(a lost one makes the next edit a conflict), and prompts and resources through the guard."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from semmem.mcp.service import Caller, Sessions
from tests.support.mcp import http_client, ok, text
from tests.support.server import TOKEN, ServerProcess, served

ALICE, READER, BOB = ("alice-sessions-token", "alice-reader-token-0", "bob-sessions-token0")
TOKENS = ",".join([TOKEN, f"{ALICE} partition=alice", f"{READER} partition=alice access=read",
                   f"{BOB} partition=bob"])
CAP = 3
LEGACY = "2025-11-25"  # the initialize handshake era: stateful sessions
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server whose tokens may hold three MCP sessions each."""
    data = tmp_path_factory.mktemp("mcp-sessions") / "db"
    with served(data, {"SEMMEM_TOKENS": TOKENS,
                       "SEMMEM_MCP_SESSIONS_PER_TOKEN": str(CAP)}) as process:
        yield process


class RawSession:
    """One stateful MCP session over plain HTTP (JSON responses)."""

    def __init__(self, http: httpx.Client, token: str) -> None:
        self.http, self.token = http, token
        self.id: str | None = None
        self._ids = iter(range(1, 10**6))

    def headers(self) -> dict[str, str]:
        hdrs = {**ACCEPT, "Authorization": f"Bearer {self.token}"}
        if self.id is not None:
            hdrs.update({"Mcp-Session-Id": self.id, "Mcp-Protocol-Version": LEGACY})
        return hdrs

    def open(self) -> httpx.Response:
        """Send ``initialize`` (and ``initialized`` once it is accepted)."""
        r = self.http.post("/mcp", headers=self.headers(), json={
            "jsonrpc": "2.0", "id": next(self._ids), "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "flood", "version": "1"}}})
        if r.status_code == 200:
            self.id = r.headers["mcp-session-id"]
            note = self.http.post("/mcp", headers=self.headers(), json={
                "jsonrpc": "2.0", "method": "notifications/initialized"})
            assert note.status_code == 202, note.text
        return r

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool call; its result."""
        r = self.http.post("/mcp", headers=self.headers(), json={
            "jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})
        assert r.status_code == 200, r.text
        result: dict[str, Any] = r.json()["result"]
        return result

    def close(self) -> None:
        """End the session (HTTP DELETE)."""
        assert self.http.delete("/mcp", headers=self.headers()).status_code in (200, 204)


def test_one_token_cannot_lock_other_tenants_out(server: ServerProcess) -> None:
    """A read-only token holds at most three sessions: the fourth is a 429 it can act on,
    another tenant still gets in, and ending a session makes room."""
    with server.client() as http:
        held = [RawSession(http, READER) for _ in range(CAP)]
        for session in held:
            assert session.open().status_code == 200
        refused = RawSession(http, READER).open()
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "overloaded"
        assert f"already has {CAP} MCP sessions open" in refused.json()["error"]["message"]
        assert refused.headers["retry-after"] == "1"
        other = RawSession(http, BOB)
        assert other.open().status_code == 200  # another tenant is not locked out
        other.close()
        held.pop().close()
        assert RawSession(http, READER).open().status_code == 200  # room again


def test_idle_sessions_end_and_free_their_place(tmp_path: Path) -> None:
    """With SEMMEM_MCP_SESSION_IDLE_S the SDK ends an idle session: its id answers 404 and
    the token may open another."""
    process = ServerProcess(tmp_path / "db", env={"SEMMEM_TOKENS": TOKENS,
                                                  "SEMMEM_MCP_SESSIONS_PER_TOKEN": "1",
                                                  "SEMMEM_MCP_SESSION_IDLE_S": "1"}).start()
    try:
        process.wait_ready()
        with process.client() as http:
            first = RawSession(http, READER)
            assert first.open().status_code == 200
            deadline = time.monotonic() + 30
            # Knocking with new sessions (never touching the first one, which would keep it
            # busy): refused while the first is open, accepted once it idled out.
            while (knock := RawSession(http, READER).open()).status_code == 429:
                assert time.monotonic() < deadline, "the idle session never ended"
                time.sleep(0.2)
            assert knock.status_code == 200, knock.text
            gone = http.post("/mcp", headers=first.headers(),
                             json={"jsonrpc": "2.0", "id": 99, "method": "ping"})
            assert gone.status_code == 404, gone.text
    finally:
        process.stop()


def test_a_lost_cursor_makes_the_next_edit_conflict(server: ServerProcess) -> None:
    """A session whose recall's cursor was pushed out (65 later sessions of the same token
    recalled) gets a conflict on its next edit, never an unchecked edit; after recalling
    again it edits."""
    with server.client() as http:
        first = RawSession(http, ALICE)
        assert first.open().status_code == 200
        n = first.call("remember", {"text": "The spare key is under the blue pot."})[
            "structuredContent"]["n"]
        first.call("recall", {"text": "spare key"})
        for _ in range(65):
            later = RawSession(http, ALICE)
            assert later.open().status_code == 200
            later.call("recall", {"text": "spare key"})
            later.close()
        refused = first.call("update", {"n": n, "text": "The spare key is with the neighbour."})
        assert refused["isError"] is True
        assert refused["structuredContent"]["error"]["code"] == "conflict"
        assert "call recall again" in refused["content"][0]["text"]
        first.call("recall", {"text": "spare key"})
        done = first.call("update", {"n": n, "text": "The spare key is with the neighbour."})
        assert done.get("isError") is not True, done
        first.close()


def test_cursors_are_kept_per_token() -> None:
    """One token's sessions recalling never push out another token's cursor."""
    sessions = Sessions(limit=2)
    bob = Caller("bob", True, "bob-session", principal="bob-digest")
    sessions.recalled(bob, "c1.7.bob")
    for i in range(10):
        sessions.recalled(Caller("alice", True, f"alice-{i}", principal="alice-digest"),
                          f"c1.{i}.alice")
    assert sessions.cursor(bob) == "c1.7.bob" and not sessions.lost(bob)
    pushed_out = Caller("alice", True, "alice-0", principal="alice-digest")
    assert sessions.cursor(pushed_out) is None and sessions.lost(pushed_out)


async def test_prompts_and_resources_pass_the_guard_and_are_counted(
        server: ServerProcess) -> None:
    """Resources and the prompt are counted in the metrics like tool calls (the same guard,
    so the same concurrency limit); a Unicode digit in a URI is a clean error."""
    async with http_client(server.url + "/mcp", BOB) as client:
        ok(await client.call_tool("remember", {"text": "Bob's bike is a green Brompton."}))
        listed = (await client.list_resources()).resources
        assert [str(r.uri) for r in listed] == ["semmem://items/1"]
        read = await client.read_resource("semmem://items/1")
        assert read.contents[0].text == "Bob's bike is a green Brompton."  # type: ignore[union-attr]
        prompt = await client.get_prompt("memory-context", {"text": "Bob's bike"})
        assert "green Brompton" in text(prompt)
        for uri in ("semmem://items/²", "semmem://items/٣"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert "resources are semmem://items/<n>" in str(refused.value)
            assert "invalid literal" not in str(refused.value)
    with server.client() as http:
        metrics = http.get("/metrics").text
    counted = {line.split("{", 1)[1].split("}", 1)[0]: float(line.rsplit(" ", 1)[1])
               for line in metrics.splitlines()
               if line.startswith("semmem_requests_total{")}
    resources = sum(v for k, v in counted.items() if 'tool="resources"' in k)
    prompts = sum(v for k, v in counted.items() if 'tool="prompt"' in k)
    assert resources >= 4 and prompts >= 1, counted
