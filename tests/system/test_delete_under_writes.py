"""Deleting a partition while writes to it are in flight (issue 46, item 1): real servers, one
and then two replicas on one data directory, a client remembering into the partition about
every 0.15 s while an owner deletes it, cycle after cycle.

What must hold: every answer is 200 or a clean refusal in the envelope (503/404, never 500
``internal``); the DELETE answers 200; no write acknowledged after a DELETE answered is lost; a
fact acknowledged before a DELETE was sent is served by no replica once it answered; after the
forget window no fact missing from the partition is in any decoded file; ``semmem check``
finds nothing.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from semmem.embedding.fakes import HashingEmbedder
from tests.support.files import decoded_hits
from tests.support.memory import open_memory
from tests.support.server import ADMIN, ServerProcess
from tests.support.web import send, tool

PARTITION = "racing"
PACE_S = 0.15  # the client's pace: a remember about this often per writer
CLEAN = {200, 404, 503}  # 404/503 only as the envelope's clean refusals


@dataclass
class Write:
    """One remember as the client saw it."""

    text: str
    sent: float
    answered: float
    status: int
    body: dict[str, object]


@dataclass
class Log:
    """Everything the writers and the owner saw, in the client's monotonic time."""

    writes: list[Write] = field(default_factory=list)
    deletes: list[tuple[float, float]] = field(default_factory=list)  # sent, answered
    bad: list[str] = field(default_factory=list)  # answers that break the contract
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acked(self) -> list[Write]:
        with self.lock:
            return [w for w in self.writes if w.status == 200]


def _check_answer(r: httpx.Response, what: str, log: Log) -> dict[str, object]:
    body: dict[str, object] = r.json() if r.headers.get("content-type", "").startswith(
        "application/json") else {}
    error = body.get("error") if isinstance(body, dict) else None
    if r.status_code not in CLEAN or "Traceback" in r.text:
        log.bad.append(f"{what}: {r.status_code} {r.text[:300]}")
    elif r.status_code != 200 and not (isinstance(error, dict)
                                       and error.get("code") not in (None, "internal")):
        log.bad.append(f"{what}: {r.status_code} without a clean envelope: {r.text[:300]}")
    return body


def _writer(server: ServerProcess, tag: str, log: Log, stop: threading.Event) -> None:
    with server.client() as c:
        for i in itertools.count():
            if stop.is_set():
                return
            text = f"{tag} fact {i} MARK{uuid.uuid4().hex[:12]}"
            sent = time.monotonic()
            r = send(c, tool("remember", {"text": text}, partition=PARTITION))
            answered = time.monotonic()
            body = _check_answer(r, f"remember via {tag}", log)
            with log.lock:
                log.writes.append(Write(text, sent, answered, r.status_code, body))
            stop.wait(PACE_S)  # the client's pace, not a wait for a condition


def _texts(server: ServerProcess, log: Log) -> set[str]:
    """The partition's live texts, as ``server`` exports them (an empty export when gone)."""
    with server.client() as c:
        r = c.get("/admin/export", params={"partition": PARTITION}, headers=ADMIN)
    _check_answer(r, f"export via {server.port}", log)
    assert r.status_code == 200, r.text
    return {json.loads(line)["text"] for line in r.text.splitlines() if line.strip()}


def _wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    until = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < until, f"timed out waiting for {what}"
        time.sleep(0.05)


def _acked_since(log: Log, t: float) -> int:
    return sum(1 for w in log.acked() if w.sent > t)


def _race(servers: list[ServerProcess], cycles: int) -> Log:
    """Writers on every server; each cycle one of them (in turn) deletes the partition once
    a few writes were acknowledged, and every server's export is checked."""
    log = Log()
    stop = threading.Event()
    threads = [threading.Thread(target=_writer, args=(s, f"w{k}", log, stop), daemon=True)
               for k, s in enumerate(servers)]
    for t in threads:
        t.start()
    last_answer = 0.0
    try:
        for cycle in range(cycles):
            # A few writes acknowledged since the last DELETE answered: they must all be there.
            _wait_for(lambda since=last_answer: _acked_since(log, since) >= 3 * len(servers),
                      30, "writes between deletes")
            kept = {w.text for w in log.acked() if w.sent > last_answer}
            for s in servers:
                missing = kept - _texts(s, log)
                assert not missing, f"cycle {cycle}: acknowledged writes lost: {missing}"
            owner = servers[cycle % len(servers)]
            with owner.client() as c:
                sent = time.monotonic()
                r = c.delete("/admin/partitions", params={"partition": PARTITION},
                             headers=ADMIN)
                answered = time.monotonic()
            _check_answer(r, f"DELETE cycle {cycle}", log)
            assert r.status_code == 200, f"cycle {cycle}: DELETE answered {r.text}"
            log.deletes.append((sent, answered))
            before = {w.text for w in log.acked() if w.answered < sent}
            for s in servers:  # at once, on every replica: none of them serves the old facts
                served = before & _texts(s, log)
                assert not served, f"cycle {cycle}: {s.port} still served {len(served)}"
            last_answer = answered
        _wait_for(lambda: _acked_since(log, last_answer) >= 3 * len(servers), 30,
                  "writes after the last delete")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not log.bad, log.bad[:5]
    kept = {w.text for w in log.acked() if w.sent > last_answer}
    for s in servers:
        assert not kept - _texts(s, log), "acknowledged writes after the last delete lost"
    return log


def _no_deleted_text_left(data: Path, servers: list[ServerProcess], log: Log,
                          timeout: float) -> None:
    """Every acknowledged text the partition no longer holds leaves every decoded file within
    the forget window; the ones it holds are still found (the scan's positive control)."""
    live = _texts(servers[0], log)
    acked = [w.text for w in log.acked()]
    gone = [t for t in acked if t not in live]
    assert gone and live
    held = [t for t in acked if t in live]
    assert decoded_hits(data, held) == set(range(len(held)))  # the scanner sees live ones
    until = time.monotonic() + timeout
    while left := decoded_hits(data, gone):
        assert time.monotonic() < until, (
            f"{len(left)} of {len(gone)} deleted texts still on disk, e.g. "
            f"{[gone[i] for i in sorted(left)[:3]]}")
        time.sleep(0.5)


def _check_clean(data: Path, servers: list[ServerProcess]) -> None:
    """No server logged an error, and what ``semmem check`` runs finds nothing in any
    partition of the store nor in the deleted one."""
    for s in servers:
        s.stop()
        out = s.output()
        assert "Traceback" not in out and "ERROR" not in out, out[-3000:]

    async def inspect() -> dict[str, list[str]]:
        m = await open_memory(data, HashingEmbedder())
        try:
            names = {*await m.partitions(), PARTITION}
            return {p: found.problems for p in sorted(names)
                    if (found := await m.check(p)).problems}
        finally:
            await m.close()

    assert asyncio.run(inspect()) == {}


@pytest.mark.timeout(180)
def test_deleting_a_partition_under_writes_on_one_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServerProcess(data, log=tmp_path / "a.log").start()
    try:
        server.wait_ready()
        log = _race([server], cycles=8)
        _no_deleted_text_left(data, [server], log, timeout=60)
    finally:
        server.stop()
    _check_clean(data, [server])


@pytest.mark.timeout(240)
def test_two_replicas_racing_deletes_against_writes_lose_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    servers = [ServerProcess(data, log=tmp_path / f"{k}.log").start() for k in "ab"]
    try:
        for s in servers:
            s.wait_ready()
        log = _race(servers, cycles=10)
        _no_deleted_text_left(data, servers, log, timeout=60)
    finally:
        for s in servers:
            s.stop()
    _check_clean(data, servers)
