"""End to end against real server processes: crashes, wire-level limits, concurrency, the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from semmem.store import table_name
from tests.support.server import ADMIN, AUTH, REPO, TOKEN, ServerProcess, free_port
from tests.support.web import assert_error, recall, send, tool


def _manifests(data: Path, partition: str) -> int:
    versions = data / f"{table_name(partition)}.lance" / "_versions"
    return len(list(versions.glob("*.manifest"))) if versions.exists() else 0


def _raw_post(port: int, body: bytes) -> socket.socket:
    """Send a whole request on a raw socket and return it unread (the reply may be lost)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


@pytest.mark.timeout(120)
def test_write_replays_after_kill9(tmp_path: Path) -> None:
    """A write committed before a crash replays after restart: same bytes, no second item.

    One write is answered and then the server is SIGKILLed; another is killed the moment its
    commit reaches disk, before anyone reads its reply. After a restart on the same data, both
    retries replay their original result and the partition holds exactly two items.
    """
    data, p = tmp_path / "db", "crash"
    first_body = tool("remember", {"text": "Uma was born in Porto"}, partition=p,
                      deadline=300)
    lost_body = tool("remember", {"text": "Uma studies law"}, partition=p, deadline=300)
    server = ServerProcess(data).start().wait_ready()
    try:
        with server.client() as c:
            first = send(c, first_body)
        assert first.json() == {"result": {"status": "stored", "n": 1, "count": 1}}
        before = _manifests(data, p)
        sock = _raw_post(server.port, json.dumps(lost_body).encode())
        deadline = time.monotonic() + 30
        while _manifests(data, p) == before:  # the commit is on disk…
            assert time.monotonic() < deadline, "write never committed"
            time.sleep(0.001)
        server.kill9()  # …and the process dies without a chance to finish or clean up
        sock.close()
    finally:
        server.stop()

    restarted = ServerProcess(data).start().wait_ready()
    try:
        with restarted.client() as c:
            again = send(c, first_body)
            assert again.status_code == 200
            assert again.content == first.content
            lost = send(c, lost_body)
            assert lost.status_code == 200
            # the fake embedder finds the first fact similar: the hint is part of the replay
            assert lost.content == (b'{"result":{"count":2,"n":2,"similar":[{"n":1,'
                                    b'"score":0.5164,"text":"Uma was born in Porto"}],'
                                    b'"status":"stored"}}')
            mismatch = send(c, {**lost_body, "arguments": {"text": "Uma studies medicine"}})
            assert_error(mismatch, 409, "idempotency_mismatch")
            items = c.get("/admin/items", params={"partition": p}, headers=ADMIN).json()
            assert [(i["n"], i["text"]) for i in items["items"]] == [
                (1, "Uma was born in Porto"), (2, "Uma studies law")]
    finally:
        restarted.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server process for the wire-level tests of this module."""
    proc = ServerProcess(tmp_path_factory.mktemp("e2e") / "db",
                         env={"SEMMEM_MAX_CONCURRENCY": "64"}).start()
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def _read_response(sock: socket.socket) -> tuple[int, dict[str, object]]:
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    length = int(headers["content-length"])
    while len(rest) < length:
        rest += sock.recv(65536)
    return int(lines[0].split()[1]), json.loads(rest[:length])


def test_body_declared_over_64KiB_refused_before_read(server: ServerProcess) -> None:
    """Content-Length over 64 KiB: 413 comes back while the client has sent 1 KiB of it."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"Content-Length: 10000000\r\n\r\n" + b"{" + b" " * 1024
        )
        status, body = _read_response(sock)
    assert status == 413
    assert body["error"]["code"] == "too_large"  # type: ignore[index]


def test_body_streamed_over_64KiB_refused_before_end(server: ServerProcess) -> None:
    """A chunked body is refused once it passes 64 KiB, though the client never finished it."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            b"POST /memory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b" " * 8192
        for _ in range(9):  # 72 KiB, no terminating chunk
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        status, body = _read_response(sock)
    assert status == 413
    assert body["error"]["code"] == "too_large"  # type: ignore[index]


def test_remember_40_parallel_distinct_numbers(server: ServerProcess) -> None:
    """40 concurrent remembers to one partition get 40 distinct numbers, 1 to 40."""
    p = "parallel"

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            bodies = [tool("remember", {"text": f"parallel fact number {i}"}, partition=p)
                      for i in range(40)]
            return await asyncio.gather(*(
                c.post("/memory", json=b, headers=AUTH) for b in bodies))

    responses = asyncio.run(go())
    assert [r.status_code for r in responses] == [200] * 40
    numbers = sorted(r.json()["result"]["n"] for r in responses)
    assert numbers == list(range(1, 41))
    with server.client() as c:
        text = send(c, recall(None, partition=p, max_bytes=16384)).json()["text"]
    assert len(text.split("\n")) == 40


def test_connection_reuse_after_errors(server: ServerProcess) -> None:
    """Errors do not break the connection: one keep-alive client sees 401, 400, 200 in turn."""
    with server.client() as c:
        assert_error(c.post("/memory", json={}), 401, "unauthorized")
        assert_error(c.post("/memory", json=[], headers=AUTH), 400, "invalid_request")
        assert c.post("/memory", json=recall("x", partition="reuse"),
                      headers=AUTH).status_code == 200


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMMEM_")}
    env.update(extra)
    return env


def test_serve_insecure_refused_off_loopback(tmp_path: Path) -> None:
    """`semmem serve --insecure` on a non-loopback host exits with an error, serving nothing."""
    cli = [sys.executable, "-m", "semmem.cli", "serve", "--insecure", "--host", "0.0.0.0",
           "--data", str(tmp_path / "db")]
    done = subprocess.run(cli, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "--insecure" in done.stderr and "loopback" in done.stderr
    assert not (tmp_path / "db").exists()


def _serve_tokenless(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path, int]:
    """`semmem serve` with no token configured, its output (no terminal) in a log: the process,
    the log and the port."""
    port = free_port()
    cli = [sys.executable, "-m", "semmem.cli", "serve", "--port", str(port), "--data",
           str(tmp_path / "db")]
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(cli, cwd=REPO, env=_env(PYTHONUNBUFFERED="1", **env),
                                stdout=sink, stderr=subprocess.STDOUT, text=True)
    return proc, log, port


def _wait_healthy(c: httpx.Client, proc: subprocess.Popen[str], log: Path,
                  deadline: float) -> None:
    """Until the server answers ``/healthz`` (failing if it exits or ``deadline`` passes)."""
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            if c.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.timeout(120)
def test_serve_generates_token_printed_once(tmp_path: Path) -> None:
    """`semmem serve` with no token generates one and accepts only it; with stdout a log (no
    terminal) the token is not in it but in a file only its owner reads."""
    proc, log, port = _serve_tokenless(tmp_path, SEMMEM_LOG_LEVEL="warning")
    try:
        deadline = time.monotonic() + 60
        while "bearer token is not printed" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        where = Path(log.read_text().split("it is in ", 1)[1].split(" (readable", 1)[0])
        assert where == tmp_path / "db" / "generated-token"
        assert where.stat().st_mode & 0o077 == 0
        token = where.read_text().strip()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            _wait_healthy(c, proc, log, deadline)
            body = recall("x", partition="serve")
            assert_error(c.post("/memory", json=body), 401, "unauthorized")
            assert_error(c.post("/memory", json=body, headers=AUTH), 401, "unauthorized")
            r = c.post("/memory", json=body, headers={"Authorization": f"Bearer {token}"})
            # Accepted: answered (200), or 503 while the bundled model is still loading.
            assert r.status_code in (200, 503), r.text
            if r.status_code == 503:
                assert r.json()["error"]["code"] == "unavailable"
                assert r.headers["retry-after"] == "2"
    finally:
        proc.terminate()
        proc.wait(30)
    assert token not in log.read_text()
    assert len(token) >= 40


@pytest.mark.timeout(120)
def test_serve_in_json_log_mode_writes_only_json_lines(tmp_path: Path) -> None:
    """With ``SEMMEM_LOG_FORMAT=json`` the generated token's note is a JSON log line like
    every other (it was a plain line a collector could not parse). The note comes once the
    server holds its port and its store (the token's file is written then)."""
    proc, log, _ = _serve_tokenless(tmp_path, SEMMEM_LOG_FORMAT="json")
    try:
        deadline = time.monotonic() + 90
        while "bearer token is not printed" not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    notes = [r for r in lines if "bearer token is not printed" in r["message"]]
    assert len(notes) == 1 and notes[0]["level"] == "WARNING"
    assert (tmp_path / "db" / "generated-token").read_text().strip() not in log.read_text()


def test_serve_insecure_on_loopback_needs_no_token(tmp_path: Path) -> None:
    """`--insecure` on 127.0.0.1 serves without any token."""
    server = ServerProcess(tmp_path / "db", env={"SEMMEM_INSECURE": "true",
                                                 "SEMMEM_TOKENS": ""}).start()
    try:
        server.wait_ready()
        with server.client() as c:
            r = c.post("/memory", json=recall("x", partition="open"))
        assert r.status_code == 200
        assert r.json()["text"] == ""
    finally:
        server.stop()
