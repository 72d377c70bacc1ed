"""Short ``semmem mcp`` sessions alone (no ``semmem serve`` on the store) keep the forget
tool's promise: a forgotten text leaves every file within the forget window."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from semmem.embedding.fakes import HashingEmbedder
from tests.support.files import decoded_with
from tests.support.mcp import ok, stdio_client, stdio_params

RETENTION_S, DELAY_S = 10.0, 0.2  # the default retention; server_env's delay
# The forget window (``Purger.window_s``): the follow-up's lag, then a retention and the delay.
WINDOW_S = (RETENTION_S + DELAY_S + max(DELAY_S, 1.0)) + RETENTION_S + DELAY_S
MARGIN_S = 10.0  # a shared machine starts a session slowly


@pytest.mark.timeout(180)
async def test_short_stdio_sessions_alone_purge_a_forget_within_the_window(
        tmp_path: Path) -> None:
    """remember and forget in a session that ends at once, then short sessions of one recall
    each: the text and its vector are gone within the window (before: each start scheduled
    its purge a retention out and each end handed it on, so none ever ran)."""
    data = tmp_path / "db"
    secret = "the vault code is 3390-short-session"
    params = stdio_params(data)
    async with stdio_client(params) as client:
        n = ok(await client.call_tool("remember", {"text": secret}))["n"]
        ok(await client.call_tool("remember", {"text": "Dana works at Acme."}))
        ok(await client.call_tool("forget", {"n": n}))
        forgot = time.monotonic()
        vector = HashingEmbedder().embed_batch([secret])[0]
        assert decoded_with(data, secret, vector)  # the scan sees it first
    sessions = 0
    while left := await asyncio.to_thread(decoded_with, data, secret, vector):
        waited = time.monotonic() - forgot
        assert waited < WINDOW_S + MARGIN_S, \
            f"still on disk {waited:.0f} s after the forget, {sessions} sessions on: {left}"
        async with stdio_client(params) as client:  # the next task's short session
            ok(await client.call_tool("recall", {"text": "What is the vault code?"}))
        sessions += 1
