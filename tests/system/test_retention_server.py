"""Retention on a real ``semmem serve`` process: the sweep at start-up forgets what expired
while no server ran, and its purge takes the text off every file; the periodic sweep and the
deployment default (``SEMMEM_RETENTION``) work over the wire."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from semmem.embedding.fakes import HashingEmbedder
from semmem.items import iso, now_ms
from tests.support.files import decoded_with
from tests.support.memory import open_memory
from tests.support.server import ADMIN, ServerProcess
from tests.support.web import recall, remember, send

SECRET = "the code for the expired locker is MARKER seven azure"
FAST = {"SEMMEM_VERSION_RETENTION_S": "1", "SEMMEM_MAINTENANCE_DELAY_S": "0.1"}
WINDOW = 60.0  # the forget window with these settings is ~11 s plus passes: a generous bound


def wait_for(condition: Callable[[], Any], limit: float) -> Any:
    """Poll until ``condition`` returns something truthy (fails after ``limit`` seconds)."""
    started = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() - started < limit, "condition never held"
        time.sleep(0.1)


def test_the_start_up_sweep_forgets_and_purges_what_expired_offline(tmp_path: Path) -> None:
    root = tmp_path / "db"

    async def write() -> tuple[int, int]:
        m = await open_memory(root, HashingEmbedder())
        await m.remember("p", "a fact that stays")
        ends = now_ms() + 200  # in the future when written: a past one is refused
        n = (await m.remember("p", SECRET, expires_at=iso(ends)))["n"]
        await m.close()
        return int(n), ends

    n, ends = asyncio.run(write())
    assert decoded_with(root, text=SECRET)  # the positive control
    wait_for(lambda: now_ms() > ends, 5)
    # A sweep every hour: only the one at start-up can forget it within the window.
    server = ServerProcess(root, env={**FAST, "SEMMEM_RETENTION_SWEEP_S": "3600"}).start()
    try:
        server.wait_ready()
        with server.client() as c:
            r = send(c, recall("expired locker code"))
            assert r.status_code == 200 and SECRET not in r.text
            stats = wait_for(lambda: (s := c.get("/admin/stats", params={"partition": "p"},
                                                 headers=ADMIN).json())["forgotten"] == 1
                             and s, 30)
            assert stats["count"] == 1 and stats["highest"] == n
            wait_for(lambda: decoded_with(root, text=SECRET) == [], WINDOW)
            assert remember(c, "p", "a later fact")["n"] == n + 1  # never reused
    finally:
        server.stop()


def test_the_default_hides_at_once_and_a_read_brings_the_sweep(tmp_path: Path) -> None:
    """Under SEMMEM_RETENTION=2s a fact leaves recall two seconds after its write; the read
    that found it expired has the partition swept soon (the periodic sweep is an hour away)."""
    server = ServerProcess(tmp_path / "db", env={
        **FAST, "SEMMEM_RETENTION": "2s", "SEMMEM_RETENTION_SWEEP_S": "3600"}).start()
    try:
        server.wait_ready()
        with server.client() as c:
            written = time.time()
            remember(c, "p", SECRET)
            shown = send(c, recall("expired locker code")).json()
            assert SECRET in shown["text"] or time.time() - written >= 2  # seen while live
            wait_for(lambda: SECRET not in send(c, recall("expired locker code")).text, 10)
            assert time.time() - written >= 2  # not before its time
            policy = c.get("/admin/retention", params={"partition": "p"}, headers=ADMIN).json()
            assert policy["default"] == "2s" and policy["effective"] == "2s"
            wait_for(lambda: c.get("/admin/stats", params={"partition": "p"},
                                   headers=ADMIN).json()["forgotten"] == 1, 20)
    finally:
        server.stop()
