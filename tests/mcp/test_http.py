"""``/mcp`` on a real ``semmem serve`` process, driven by the MCP SDK's streamable-HTTP client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from starlette.testclient import TestClient

from semmem.embedding.fakes import HashingEmbedder
from semmem.errors import InvalidInput
from semmem.tracing import partition_id
from semmem.web.app import create_app
from tests.support.mcp import (
    MODES,
    check_roundtrip,
    check_tool_list,
    error,
    http_client,
    ok,
    text,
)
from tests.support.server import AUTH, TOKEN, ServerProcess, served
from tests.support.spans import console_spans, parent_id, span_id
from tests.support.web import app_client, assert_error, recall, send, settings_for

# Inline tokens: the contract's (unbound), and MCP tokens bound to a partition.
TOKENS = ",".join([
    TOKEN,
    "alice-token-000000 partition=alice",
    "bob-token-00000000 partition=bob",
    "bob-reader-0000000 partition=bob access=read",
    "trip-auto-token-000 partition=trip-auto",
    "trip-legacy-token-0 partition=trip-legacy",
    "traced-token-00000 partition=traced",
])
TRIP = {"auto": "trip-auto-token-000", "legacy": "trip-legacy-token-0"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One real server for the module, its store in a fresh directory."""
    data = tmp_path_factory.mktemp("mcp-http") / "db"
    # Traces on the console: the MCP requests' spans are read back from the output.
    with served(data, {"SEMMEM_TOKENS": TOKENS,
                       "OTEL_TRACES_EXPORTER": "console"}) as process:
        yield process


def _url(server: ServerProcess) -> str:
    return server.url + "/mcp"


@pytest.mark.parametrize("mode", MODES)
async def test_tools_and_roundtrip_over_http(server: ServerProcess, mode: str) -> None:
    """Same tool list as the contract's declaration; the whole cycle in both protocol eras."""
    async with http_client(_url(server), TRIP[mode], mode) as client:
        await check_tool_list(client)
        await check_roundtrip(client)


@pytest.mark.parametrize("mode", MODES)
async def test_read_only_token_refused_on_writes(server: ServerProcess, mode: str) -> None:
    """A token bound read-only reads its partition and gets a tool error for each write."""
    async with http_client(_url(server), "bob-token-00000000", mode) as writer:
        ok(await writer.call_tool("remember", {"text": f"Bob takes the {mode} train."}))
    async with http_client(_url(server), "bob-reader-0000000", mode) as reader:
        for name, args in (("remember", {"text": "Bob takes the bus."}),
                           ("update", {"n": 1, "text": "Bob walks."}), ("forget", {"n": 1})):
            refused = error(await reader.call_tool(name, args), "forbidden")
            assert refused.startswith(f"the {name} tool writes; this memory is bound read-only")
        assert f"Bob takes the {mode} train." in text(
            await reader.call_tool("recall", {"text": ""}))


async def test_token_sees_only_its_partition(server: ServerProcess) -> None:
    """Alice's token and Bob's reach different partitions whatever the arguments say."""
    async with http_client(_url(server), "alice-token-000000") as alice:
        secret = "Alice's locker code is 4711."
        n = ok(await alice.call_tool("remember", {"text": secret}))["n"]
        got = text(await alice.call_tool("recall", {"text": secret}))
        assert got.endswith(secret), got
    async with http_client(_url(server), "bob-token-00000000") as bob:
        assert "4711" not in text(await bob.call_tool("recall", {"text": secret}))
        found = ok(await bob.call_tool("search", {"query": "Alice's locker code is 4711."}))
        assert all("4711" not in item["text"] for item in found["items"])
        pages = await bob.list_resources()
        assert all("4711" not in (r.title or "") for r in pages.resources)
        # The argument cannot pick the partition: the schema refuses it.
        error(await bob.call_tool("search", {"query": "locker", "partition": "alice"}),
              "invalid_arguments")
        try:
            read = await bob.read_resource(f"semmem://items/{n}")
        except MCPError as exc:  # Bob has no fact under that number
            assert "does not exist" in exc.error.message
        else:  # Bob's own fact under that number
            assert all("4711" not in getattr(c, "text", "") for c in read.contents)


async def test_tool_calls_counted_in_metrics(server: ServerProcess) -> None:
    """MCP tool calls show in /metrics under operation "mcp", by tool and status (the calls
    made here, so the test stands alone)."""
    async with http_client(_url(server), "bob-reader-0000000") as reader:
        ok(await reader.call_tool("recall", {"text": ""}))
        error(await reader.call_tool("remember", {"text": "Bob counts."}), "forbidden")
    metrics = httpx.get(server.url + "/metrics", timeout=30).text
    assert 'semmem_requests_total{operation="mcp",status="200",tool="recall"}' in metrics
    assert 'semmem_requests_total{operation="mcp",status="403",tool="remember"}' in metrics


def test_auth_refusals(server: ServerProcess) -> None:
    """No token, a wrong one: 401 with a challenge; a contract token: 403; and the reverse."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for auth in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
            r = http.post("/mcp", json=body, headers={**headers, **auth})
            assert_error(r, 401, "unauthorized")
            assert r.headers["www-authenticate"] == 'Bearer realm="semmem"'
        unbound = http.post("/mcp", json=body, headers={**headers, **AUTH})
        assert "not bound to a partition" in assert_error(unbound, 403, "forbidden")["message"]
        # A bound token is an MCP token: the provider endpoint does not accept it, and says
        # why (it is valid, bound to alice), never echoing the token.
        provider = send(http, recall("x", partition="alice"),
                        {"Authorization": "Bearer alice-token-000000",
                         "Content-Type": "application/json"})
        said = assert_error(provider, 403, "forbidden")["message"]
        assert said == ("this token is bound to partition 'alice' for MCP (/mcp) only; the "
                        "provider endpoint takes a token without a binding")


def test_session_serves_only_the_token_that_opened_it(server: ServerProcess) -> None:
    """Bob's token with Alice's session id: 404, as if the session did not exist."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        opened = http.post("/mcp", json=hello,
                           headers={**accept, "Authorization": "Bearer alice-token-000000"})
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        for token, status in (("bob-token-00000000", 404), ("alice-token-000000", 200)):
            r = http.post("/mcp", json=call, headers={
                **accept, "Authorization": f"Bearer {token}", "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-11-25"})
            assert r.status_code == status, r.text


def test_body_over_64_kib_refused(server: ServerProcess) -> None:
    """The provider's request limit holds on /mcp too: 413 before anything is parsed."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "x" * 70_000}}}
    r = httpx.post(server.url + "/mcp", json=call, timeout=30, headers={
        "Authorization": "Bearer alice-token-000000",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2026-07-28"})
    assert r.status_code == 413, r.text


async def test_retried_write_in_session_applied_once(server: ServerProcess) -> None:
    """In an HTTP session, a write re-sent under its request id is replayed, not re-applied."""
    async with http_client(_url(server), "alice-token-000000", "legacy") as client:
        n = ok(await client.call_tool("remember", {"text": "Gus rides a grey horse."}))["n"]
        send_raw = client.session._dispatcher.send_raw_request  # the SDK's chosen-id request
        update = {"name": "update", "arguments": {"n": n, "text": "Gus rides a white horse."}}
        first = await send_raw("tools/call", update, {"request_id": "again"})
        second = await send_raw("tools/call", update, {"request_id": "again"})
        assert first["structuredContent"] == second["structuredContent"]
        recalled = ok(await client.call_tool("recall", {"text": "Gus rides a white horse"}))
        source = next(s for s in recalled["sources"] if s["id"] == str(n))
        assert source["revision"] == "2"


async def test_prompt_over_http(server: ServerProcess) -> None:
    """The prompt renders the token's partition's recall."""
    async with http_client(_url(server), "alice-token-000000") as client:
        ok(await client.call_tool("remember", {"text": "Alice's favourite tea is sencha."}))
        prompt = await client.get_prompt("memory-context", {"text": "Alice's favourite tea"})
        assert "Alice's favourite tea is sencha." in text(prompt)
        with pytest.raises(MCPError, match="max_bytes"):
            await client.get_prompt("memory-context", {"text": "tea", "max_bytes": "lots"})


def test_bound_tokens_file_rotates(tmp_path: Path) -> None:
    """A tokens file with bindings: a new line is accepted without a restart."""
    tokens = tmp_path / "tokens"
    tokens.write_text("# provider\ncontract-token-000\nold-mcp-token-0000 partition=carol\n")
    process = ServerProcess(tmp_path / "db", env={"SEMMEM_TOKENS_FILE": str(tokens),
                                                  "SEMMEM_TOKENS": ""}).start()
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    try:
        process.wait_ready()
        with httpx.Client(base_url=process.url, timeout=30) as http:
            def status(token: str) -> int:
                r = http.post("/mcp", json=body,
                              headers={**headers, "Authorization": f"Bearer {token}"})
                return r.status_code
            assert status("old-mcp-token-0000") == 200 and status("new-mcp-token-0000") == 401
            tokens.write_text("contract-token-000\n"
                              "new-mcp-token-0000 partition=carol access=read\n")
            deadline = time.monotonic() + 10
            while status("new-mcp-token-0000") != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert status("new-mcp-token-0000") == 200 and status("old-mcp-token-0000") == 401
    finally:
        process.stop()


async def test_insecure_loopback_serves_configured_partition(tmp_path: Path) -> None:
    """``--insecure``: no token, the ``SEMMEM_MCP_PARTITION`` partition, loopback hosts only."""
    process = ServerProcess(tmp_path / "db", env={"SEMMEM_INSECURE": "true",
                                                  "SEMMEM_MCP_PARTITION": "zoe"}).start()
    try:
        process.wait_ready()
        async with http_client(process.url + "/mcp", None) as client:
            ok(await client.call_tool("remember", {"text": "Zoe collects stamps."}))
        # The same partition through the provider endpoint.
        with httpx.Client(base_url=process.url, timeout=30) as http:
            r = send(http, recall("", partition="zoe"), {"Content-Type": "application/json"})
            assert r.json()["text"] == "1. Zoe collects stamps."
            # A page that reached the server by DNS rebinding carries a foreign Host.
            rebound = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Host": "evil.example:80",
                                         "Accept": "application/json, text/event-stream"})
            assert rebound.status_code in (400, 403, 421), rebound.text
    finally:
        process.stop()


def test_mcp_off_and_path_taken(tmp_path: Path) -> None:
    """``SEMMEM_MCP=false`` serves no /mcp; with it on, the provider path cannot be /mcp."""
    with app_client(tmp_path / "db", mcp=False) as client:
        r = client.post("/mcp", json={}, headers={"Authorization": "Bearer alice-token-000000"})
        assert_error(r, 404, "not_found")
    with pytest.raises(InvalidInput, match="taken by MCP"):
        create_app(settings_for(tmp_path / "db2", path="/mcp"))


def test_app_started_twice_serves_mcp_each_time(tmp_path: Path) -> None:
    """Each lifespan of one app gets its own session manager (a manager runs only once)."""
    app = create_app(settings_for(tmp_path / "db", tokens="alice-token-000000 partition=alice"),
                     embedder=HashingEmbedder())
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    for _ in range(2):
        with TestClient(app) as client:
            r = client.post("/mcp", json=hello, headers={
                "Authorization": "Bearer alice-token-000000",
                "Accept": "application/json, text/event-stream"})
            assert r.status_code == 200, r.text
            assert r.json()["result"]["serverInfo"]["name"] == "semmem"


async def test_tool_calls_are_memory_spans(server: ServerProcess) -> None:
    """Over MCP too, each tool call is a GenAI memory span naming the partition by its hash,
    the HTTP route and the MCP method, with the step spans under it; a refused forget names
    its fact and has status ERROR."""
    async with http_client(_url(server), "traced-token-00000") as client:
        ok(await client.call_tool("remember", {"text": "the traced fact"}))
        assert "the traced fact" in text(await client.call_tool("recall", {"text": "traced"}))
        assert (await client.call_tool("forget", {"n": 9})).is_error

    def found() -> list[dict[str, Any]]:
        return [s for s in console_spans(server.output())
                if s["attributes"].get("gen_ai.memory.store.id") == partition_id("traced")]

    deadline = time.monotonic() + 20
    while len(found()) < 3:
        assert time.monotonic() < deadline, "no MCP spans in the output"
        time.sleep(0.05)
    spans = console_spans(server.output())
    mine = {s["name"]: s for s in found()}
    assert {"create_memory", "search_memory", "delete_memory"} <= mine.keys()
    for span in mine.values():  # the HTTP request and the MCP method carrying each call
        attrs = span["attributes"]
        assert (attrs["http.request.method"], attrs["http.route"]) == ("POST", "/mcp")
        assert attrs["mcp.method.name"] == "tools/call"
    refused = mine["delete_memory"]
    assert refused["status"]["status_code"] == "ERROR"
    assert refused["attributes"]["error.type"] == "not_found"
    assert refused["attributes"]["gen_ai.memory.record.id"] == "9"
    search = mine["search_memory"]
    assert search["attributes"]["gen_ai.memory.record.count"] == 1
    children = {s["name"] for s in spans if parent_id(s) == span_id(search)}
    assert children == {"semmem.embed", "semmem.view_read", "semmem.rank", "semmem.pack"}


def test_token_over_its_rate_refused_before_the_sdk(tmp_path: Path) -> None:
    """/mcp applies the token's rate limit: past it, 429 rate_limited with Retry-After."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream",
               "Authorization": "Bearer rate-token"}
    with app_client(tmp_path / "db", tokens="rate-token partition=r", rate_limit="6/m",
                    rate_burst=1) as c:
        assert c.post("/mcp", json=body, headers=headers).status_code != 429
        refused = c.post("/mcp", json=body, headers=headers)
        assert_error(refused, 429, "rate_limited")
        assert int(refused.headers["retry-after"]) >= 1
        assert 'semmem_rate_limited_total{surface="mcp"} 1.0' in c.get("/metrics").text
