"""Helpers for the MCP tests: the SDK's client over stdio (a subprocess) and streamable HTTP."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from semmem.protocol.declaration import tools_declaration
from tests.support.server import REPO

# `semmem mcp`'s own code path (run_stdio), with the fake embedder instead of the bundled model.
_LAUNCH = (
    "import sys; from semmem.embedding.fakes import HashingEmbedder; "
    "from semmem.settings import Settings; from semmem.mcp.server import run_stdio; "
    "run_stdio(Settings(), partition=sys.argv[1], writable=sys.argv[2] == 'rw', "
    "embedder=HashingEmbedder())"
)
MODES = ("auto", "legacy")  # the 2026-07-28 per-request era, and the initialize handshake


def server_env(data: Path, **extra: str) -> dict[str, str]:
    """The environment of a stdio server: no inherited ``SEMMEM_*``, the store in ``data``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update({"SEMMEM_DATA": str(data), "SEMMEM_LOG_LEVEL": "warning",
                "SEMMEM_MAINTENANCE_DELAY_S": "0.2", "PYTHONPATH": str(REPO)}, **extra)
    return env


def stdio_params(data: Path, partition: str = "alice", *, writable: bool = True,
                 **env: str) -> StdioServerParameters:
    """Launch ``run_stdio`` with the fake embedder as a subprocess."""
    return StdioServerParameters(
        command=sys.executable, args=["-c", _LAUNCH, partition, "rw" if writable else "ro"],
        env=server_env(data, **env), cwd=str(REPO),
    )


@asynccontextmanager
async def stdio_client(params: StdioServerParameters, mode: str = "auto"
                       ) -> AsyncIterator[Client]:
    """The SDK's client connected to a stdio server subprocess."""
    async with Client(params, mode=mode, read_timeout_seconds=60) as client:
        yield client


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str = "auto"
                      ) -> AsyncIterator[Client]:
    """The SDK's client on ``url`` (``…/mcp``), sending ``token`` as the bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


def text(result: types.CallToolResult | types.GetPromptResult) -> str:
    """The text content of a tool result or of a prompt's messages."""
    if isinstance(result, types.GetPromptResult):
        blocks = [m.content for m in result.messages]
    else:
        blocks = list(result.content)
    return "\n".join(b.text for b in blocks if isinstance(b, types.TextContent))


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """The structured content of a successful tool result."""
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error(result: types.CallToolResult, code: str) -> str:
    """The text of a tool error with this code (asserting its shape)."""
    assert result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["error"]["code"] == code, result.structured_content
    body = text(result)
    assert "Traceback" not in body
    return body


async def check_tool_list(client: Client) -> None:
    """The tools are recall plus the contract's, with the declaration's schemas and hints."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    declared = {entry["name"]: entry for entry in tools_declaration()}
    assert list(listed) == ["recall", *declared]
    for name, entry in declared.items():
        assert listed[name].input_schema == entry["input"]
        assert listed[name].description == entry["description"]
    hints = {name: tool.annotations for name, tool in listed.items()}
    assert all(h is not None and h.open_world_hint is False for h in hints.values())
    assert hints["recall"] and hints["recall"].read_only_hint is True
    assert hints["search"] and hints["search"].read_only_hint is True
    for name, destructive in (("remember", False), ("update", True), ("forget", True)):
        h = hints[name]
        assert h and (h.read_only_hint, h.destructive_hint, h.idempotent_hint) == \
            (False, destructive, True)
    recall = listed["recall"].input_schema
    assert recall["required"] == ["text"] and recall["additionalProperties"] is False


FACTS = (
    "Alice's cat is called Miso and is afraid of the vacuum cleaner.",
    "Bob prefers metric units in every report.",
    "The team deploys the billing service every Tuesday at noon.",
)


async def check_roundtrip(client: Client) -> None:
    """remember → recall within a budget → update → forget → recall, on an empty partition."""
    numbers = [ok(await client.call_tool("remember", {"text": fact}))["n"] for fact in FACTS]
    assert numbers == [1, 2, 3]
    again = ok(await client.call_tool("remember", {"text": FACTS[0]}))
    assert again == {"status": "stored", "n": 1, "count": 3, "existing": True}

    full = ok(await client.call_tool("recall", {"text": "what is the cat called"}))
    assert full["text"].split("\n")[0] == f"1. {FACTS[0]}"
    # One source per line, in line order: the contract's recall, unchanged.
    assert [s["id"] for s in full["sources"]] == \
        [line.split(".")[0] for line in full["text"].split("\n")]
    budget = len(full["text"].split("\n")[0].encode()) + 4
    small = await client.call_tool("recall", {"text": "what is the cat called",
                                              "max_bytes": budget})
    assert len(ok(small)["text"].encode()) <= budget
    assert text(small) == f"1. {FACTS[0]}" and len(ok(small)["sources"]) == 1

    updated = ok(await client.call_tool("update", {"n": 1, "text": "Alice's cat is called Mochi."}))
    assert updated == {"status": "stored", "n": 1, "count": 3}
    after = ok(await client.call_tool("recall", {"text": "what is the cat called"}))
    assert after["text"].split("\n")[0] == "1. Alice's cat is called Mochi."
    assert after["sources"][0]["revision"] == "2"

    forgot = ok(await client.call_tool("forget", {"n": 1}))
    assert forgot == {"status": "stored", "n": 1, "count": 2, "forgotten": True}
    gone = ok(await client.call_tool("recall", {"text": "what is the cat called"}))
    assert "cat" not in gone["text"] and "1" not in [s["id"] for s in gone["sources"]]
    found = ok(await client.call_tool("search", {"query": "billing deploys", "limit": 5}))
    assert found["count"] == 2 and found["items"][0]["n"] == 3
