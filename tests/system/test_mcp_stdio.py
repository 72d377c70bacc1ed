"""``semmem mcp`` over stdio, driven by the MCP SDK's client as a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from tests.support.mcp import (
    MODES,
    check_roundtrip,
    check_tool_list,
    error,
    ok,
    server_env,
    stdio_client,
    stdio_params,
    text,
)
from tests.support.server import REPO


@pytest.mark.parametrize("mode", MODES)
async def test_tools_and_roundtrip_over_stdio(tmp_path: Path, mode: str) -> None:
    """The listed tools are the contract's; the whole write/read cycle works in both eras."""
    async with stdio_client(stdio_params(tmp_path / "db"), mode) as client:
        await check_tool_list(client)
        await check_roundtrip(client)


async def test_tool_errors_tell_the_model_what_to_do(tmp_path: Path) -> None:
    """Bad arguments, unknown numbers and tools, and a stale recall are tool errors."""
    async with stdio_client(stdio_params(tmp_path / "db")) as client:
        bad = error(await client.call_tool("update", {"n": 0, "text": " "}), "invalid_arguments")
        assert "/n: must be at least 1" in bad and "Fix the arguments" in bad
        extra = error(await client.call_tool("remember", {"text": "x", "partition": "bob"}),
                      "invalid_arguments")
        assert "unexpected properties 'partition'" in extra
        missing = error(await client.call_tool("forget", {"n": 7}), "not_found")
        assert missing == "item 7 does not exist in this memory. Search memory to find the " \
                          "fact's current number."
        unknown = error(await client.call_tool("drop_everything", {}), "invalid_request")
        assert "the tools are recall, search, remember, update, forget" in unknown
        # the arguments were not the trouble: the step names what is
        assert "Fix the arguments" not in unknown and unknown.endswith(
            "Call one of the tools listed.")

        ok(await client.call_tool("remember", {"text": "Dana works at Acme."}))
        ok(await client.call_tool("recall", {"text": "Dana"}))
        ok(await client.call_tool("update", {"n": 1, "text": "Dana works at Globex."}))
        # Fact 1 changed after this session's last recall (by this session, even).
        stale = error(await client.call_tool("update", {"n": 1, "text": "Dana works at Initech."}),
                      "conflict")
        assert stale == "item 1 changed after your recall; recall again and retry"
        ok(await client.call_tool("recall", {"text": "Dana"}))
        ok(await client.call_tool("update", {"n": 1, "text": "Dana works at Initech."}))

        huge = {"text": "x" * 70_000}
        assert "over the limit of 65536 bytes" in error(
            await client.call_tool("remember", huge), "too_large")


async def test_read_only_refuses_writes_and_reads(tmp_path: Path) -> None:
    """``--read-only``: every write tool is refused, reads still answer."""
    data = tmp_path / "db"
    async with stdio_client(stdio_params(data)) as client:
        ok(await client.call_tool("remember", {"text": "Erin speaks Dutch."}))
    async with stdio_client(stdio_params(data, writable=False)) as client:
        for name, args in (("remember", {"text": "Erin speaks French."}),
                           ("update", {"n": 1, "text": "Erin speaks Greek."}),
                           ("forget", {"n": 1})):
            refused = error(await client.call_tool(name, args), "forbidden")
            assert f"the {name} tool writes; this memory is bound read-only" in refused
            assert "Do not retry" in refused
        assert text(await client.call_tool("recall", {"text": ""})) == \
            "1. Erin speaks Dutch."


async def test_partition_is_the_one_chosen_at_start(tmp_path: Path) -> None:
    """Two partitions on one store see only their own facts and number them apart."""
    data = tmp_path / "db"
    async with stdio_client(stdio_params(data, "alice")) as client:
        stored = ok(await client.call_tool("remember", {"text": "Alice's PIN hint is birds."}))
        assert stored["n"] == 1
    async with stdio_client(stdio_params(data, "bob")) as client:
        assert ok(await client.call_tool("remember", {"text": "Bob likes tea."}))["n"] == 1
        seen = ok(await client.call_tool("search", {"query": "Alice PIN hint birds"}))
        assert [item["text"] for item in seen["items"]] == ["Bob likes tea."]
        assert "Alice" not in text(await client.call_tool("recall", {"text": ""}))


async def test_retried_write_with_same_request_id_applied_once(tmp_path: Path) -> None:
    """A write re-sent under its request id replays the first result; new ids apply again."""
    async with stdio_client(stdio_params(tmp_path / "db"), "legacy") as client:
        ok(await client.call_tool("remember", {"text": "Fay has a red bike."}))
        ok(await client.call_tool("remember", {"text": "Fay has a green kayak."}))
        send = client.session._dispatcher.send_raw_request  # the SDK's caller-chosen request id
        update = {"name": "update", "arguments": {"n": 1, "text": "Fay has a blue bike."}}
        first = await send("tools/call", update, {"request_id": "retry-1"})
        second = await send("tools/call", update, {"request_id": "retry-1"})
        assert first["structuredContent"] == second["structuredContent"] == \
            {"status": "stored", "n": 1, "count": 2,
             "similar": [{"n": 2, "text": "Fay has a green kayak.", "score": 0.6}]}
        forget = {"name": "forget", "arguments": {"n": 2}}
        gone = await send("tools/call", forget, {"request_id": "retry-2"})
        replay = await send("tools/call", forget, {"request_id": "retry-2"})
        assert replay == gone and not replay["isError"]
        again = await send("tools/call", forget, {"request_id": "retry-3"})
        assert again["isError"] and again["structuredContent"]["error"]["code"] == "not_found"
        other = {"name": "update", "arguments": {"n": 1, "text": "Fay has a black bike."}}
        mismatch = await send("tools/call", other, {"request_id": "retry-1"})
        assert mismatch["structuredContent"]["error"]["code"] == "idempotency_mismatch"
        recalled = ok(await client.call_tool("recall", {"text": "Fay bike"}))
        assert recalled["text"] == "1. Fay has a blue bike."
        assert recalled["sources"][0]["revision"] == "2"  # one update applied, not two


async def test_prompt_and_paged_resources(tmp_path: Path) -> None:
    """``memory-context`` renders the recall; the facts list as resources, a page at a time."""
    async with stdio_client(stdio_params(tmp_path / "db")) as client:
        empty = await client.get_prompt("memory-context", {"text": "anything"})
        assert text(empty) == "No remembered facts are relevant."
        for i in range(1, 106):
            ok(await client.call_tool("remember", {"text": f"Fact number {i} is about topic {i}."}))
        # The empty prompt above was this session's last recall: fact 3 was created after it,
        # so it may be edited under that cursor (only items that existed then can conflict).
        ok(await client.call_tool("forget", {"n": 3}))
        prompt = await client.get_prompt("memory-context", {"text": "topic 42", "max_bytes": "64"})
        lines = text(prompt).split("\n")
        assert lines[0].startswith("Facts remembered from earlier conversations")
        assert lines[1] == "42. Fact number 42 is about topic 42."
        assert len("\n".join(lines[1:]).encode()) <= 64

        first = await client.list_resources()
        assert len(first.resources) == 100 and first.next_cursor is not None
        assert [r.uri for r in first.resources[:3]] == ["semmem://items/1", "semmem://items/2",
                                                        "semmem://items/4"]
        rest = await client.list_resources(cursor=first.next_cursor)
        assert [r.uri for r in rest.resources] == [f"semmem://items/{n}" for n in range(102, 106)]
        assert rest.next_cursor is None
        read = await client.read_resource("semmem://items/42")
        assert [c.text for c in read.contents if hasattr(c, "text")] == [
            "Fact number 42 is about topic 42."]


@pytest.mark.model
@pytest.mark.slow
async def test_semmem_mcp_command_with_bundled_model(tmp_path: Path) -> None:
    """The real command, with the real model: ranking by meaning over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "semmem.cli", "mcp", "--partition", "alice", "--data", str(tmp_path / "db")],
        env=server_env(tmp_path / "db"), cwd=str(REPO),
    )
    async with stdio_client(params) as client:
        await check_tool_list(client)
        for fact in ("Bob prefers metric units.",
                     "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
                     "The team deploys the billing service every Tuesday at noon."):
            ok(await client.call_tool("remember", {"text": fact}))
        recalled = await client.call_tool("recall", {"text": "What is the name of Alice's pet?"})
        assert text(recalled).split("\n")[0].startswith("2. Alice's cat is called Miso")
        assert json.loads(json.dumps(ok(recalled)))["sources"][0]["id"] == "2"


@pytest.mark.timeout(180)
async def test_a_session_closed_after_a_forget_hands_its_purge_to_a_running_server(
        tmp_path: Path) -> None:
    """forget over stdio, then the host closes the session at once: the session hands its
    pending purge to the store and the server serving it purges the text and its vector
    within the window plus its polling interval (before: on disk until some later start)."""
    import asyncio
    import time

    from semmem.embedding.fakes import HashingEmbedder
    from tests.support.files import decoded_with
    from tests.support.server import ServerProcess

    data = tmp_path / "db"
    secret = "the alarm code is 8812-stdio-secret"
    fast = {"SEMMEM_VERSION_RETENTION_S": "1", "SEMMEM_MAINTENANCE_DELAY_S": "0.1"}
    server = ServerProcess(data, env=fast).start()
    try:
        server.wait_ready()
        async with stdio_client(stdio_params(data, **fast)) as client:
            n = ok(await client.call_tool("remember", {"text": secret}))["n"]
            ok(await client.call_tool("remember", {"text": "Dana works at Acme."}))
            ok(await client.call_tool("forget", {"n": n}))
            vector = HashingEmbedder().embed_batch([secret])[0]
            assert decoded_with(data, secret, vector)  # the scan sees it first
        started = time.monotonic()  # the session is over: its process has exited
        window = 2 * (5 + 0.1) + 1  # the retention raised to the fence's floor
        while left := await asyncio.to_thread(decoded_with, data, secret, vector):
            assert time.monotonic() - started < window + 30, f"still on disk: {left}"
            await asyncio.sleep(0.5)
    finally:
        server.stop()


def test_a_session_stopped_with_sigterm_hands_its_purge_to_the_store(tmp_path: Path) -> None:
    """A host that ends the session with SIGTERM, the pipe still open: the process shuts down
    as at the pipe's end, leaving a purge request for the partition it forgot in (before:
    killed by the signal with its schedule)."""
    import signal
    import subprocess

    import lance

    from semmem.store import table_name

    data = tmp_path / "db"
    params = stdio_params(data, SEMMEM_MAINTENANCE_DELAY_S="30")
    proc = subprocess.Popen([params.command, *params.args], env=params.env, cwd=params.cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    def call(i: int, method: str, params: dict[str, object] | None = None) -> dict[str, object]:
        message = {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}
        proc.stdin.write((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        while True:
            answer = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if answer.get("id") == i:
                return dict(answer)

    def requests() -> set[str]:
        rows = lance.dataset(str(data / "_semmem.lance")).to_table().to_pylist()
        return {r["key"] for r in rows if r["key"].startswith("u:")}

    try:
        call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "test", "version": "0"}})
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        proc.stdin.flush()
        for i, (tool, args) in enumerate([("remember", {"text": "Dana works at Acme."}),
                                          ("forget", {"n": 1})], start=2):
            assert not call(i, "tools/call", {"name": tool, "arguments": args})["result"][
                "isError"]  # type: ignore[index]
        assert requests() == set()  # a purge of its own is pending, nothing asked yet
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert requests() == {f"u:{table_name('alice')}"}
