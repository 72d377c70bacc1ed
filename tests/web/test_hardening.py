"""Availability and hardening findings of the security review, each on a real server: DNS
rebinding under ``--insecure``, stalled uploads, partition keys past the limit, forged log
lines, Unicode digits and deeply nested bodies."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from semmem.serving.metrics import Metrics
from tests.support.server import ADMIN, AUTH, JSON, ServerProcess, served
from tests.support.web import assert_error, recall, remember, send, tool


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real server: four slots, a two-second body deadline, logging at info."""
    data = tmp_path_factory.mktemp("hardening") / "db"
    with served(data, {"SEMMEM_MAX_CONCURRENCY": "4",
                       "SEMMEM_BODY_TIMEOUT_S": "2",
                       "SEMMEM_LOG_LEVEL": "info"}) as process:
        yield process


# ----- 1. DNS rebinding under --insecure -------------------------------------------------------
def test_insecure_server_refuses_foreign_host_and_origin_on_every_route(tmp_path: Path) -> None:
    """A page rebound to 127.0.0.1 sends its own name as Host (and its origin): refused on
    the provider endpoint, the admin API and the probes, not only on /mcp."""
    process = ServerProcess(tmp_path / "db", env={"SEMMEM_INSECURE": "true",
                                                  "SEMMEM_TOKENS": ""}).start()
    try:
        process.wait_ready()
        with process.client() as c:
            body = recall("", partition="victim")
            assert send(c, body, JSON).status_code == 200  # loopback Host: served
            assert send(c, body, {**JSON, "Origin": f"http://localhost:{process.port}"}
                        ).status_code == 200
            foreign = [{"Host": "attacker.example"}, {"Host": f"attacker.example:{process.port}"},
                       {"Origin": "http://attacker.example"}, {"Origin": "null"}]
            for headers in foreign:
                r = send(c, tool("forget", {"n": 1}, partition="victim"), {**JSON, **headers})
                assert_error(r, 403, "forbidden")
                assert "loopback" in r.json()["error"]["message"]
                assert_error(c.get("/admin/partitions", headers={**ADMIN, **headers}), 403,
                             "forbidden")
                assert_error(c.get("/healthz", headers=headers), 403, "forbidden")
    finally:
        process.stop()


# ----- 4. stalled uploads ----------------------------------------------------------------------
def _stalled(port: int) -> socket.socket:
    """A provider request whose body promises 1,000 bytes and sends one."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = (f"POST /memory HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: {AUTH['Authorization']}\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{")
    sock.sendall(head.encode())
    return sock


def test_stalled_uploads_hold_no_slot_and_time_out(server: ServerProcess) -> None:
    """Eight uploads stalled mid-body (twice the slots) leave every slot free, and each is
    answered 408 once the body deadline passes."""
    socks = [_stalled(server.port) for _ in range(8)]
    try:
        with server.client() as c:
            r = send(c, recall("anything", partition="stall"))
            assert r.status_code == 200, r.text  # not 429: no stalled upload holds a slot
        started = time.monotonic()
        for sock in socks:
            answer = b""
            while b"request_timeout" not in answer:
                chunk = sock.recv(4096)
                assert chunk, f"closed without the answer: {answer[:300]!r}"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert time.monotonic() - started < 30
    finally:
        for sock in socks:
            sock.close()


# ----- 6. partition keys and the metrics -------------------------------------------------------
def test_partition_key_past_the_limit_is_a_clear_400(server: ServerProcess) -> None:
    """1,024 UTF-8 bytes is a partition; one more is refused, on every surface, unechoed."""
    with server.client() as c:
        assert remember(c, "k" * 1024, "a fact in a long-keyed partition")["n"] == 1
        for body in (recall("x", partition="k" * 1025),
                     tool("search", {"query": "x"}, partition="é" * 513)):
            error = assert_error(send(c, body), 400, "invalid_request")
            assert "partition must be at most 1024 UTF-8 bytes" in error["message"]
            assert "kkkk" not in error["message"]
        r = c.get("/admin/items", params={"partition": "k" * 1025}, headers=ADMIN)
        assert "at most 1024 UTF-8 bytes" in assert_error(r, 400, "invalid_request")["message"]


def test_metrics_keep_nothing_per_empty_partition() -> None:
    """Searches on 2,000 fresh 1 KB keys (count 0) cost the metrics nothing that stays."""
    metrics = Metrics()
    metrics.partition_count("seen", 3)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(2000):
            metrics.partition_count(f"{i:06d}" + "x" * 1018, 0)
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert grown < 200_000, grown  # keeping the keys would be 2 MB
    assert b"semmem_items_stored 3.0" in metrics.render()
    metrics.partition_count("seen", 0)  # emptied: the total follows
    assert b"semmem_items_stored 0.0" in metrics.render()


# ----- 7. log forging --------------------------------------------------------------------------
def test_control_characters_from_callers_cannot_forge_log_lines(server: ServerProcess) -> None:
    """A %0A in the path (no token needed) or a newline in operationId stays in its line."""
    with server.client() as c:
        assert c.get("/nowhere%0AFORGED-PATH 200 OK").status_code == 404
        body = recall("x", operation_id="op\nFORGED-OP\u2028also", deadline=-5)
        assert_error(send(c, body), 400, "deadline_exceeded")
        assert send(c, b"{}", {**AUTH, **JSON}, path="/memory%0D%0AFORGED-CR").status_code == 404
    deadline = time.monotonic() + 10
    while "FORGED-OP" not in server.output():
        assert time.monotonic() < deadline, "the refusal was not logged"
        time.sleep(0.05)
    log = server.output()
    assert "FORGED-PATH" in log and "FORGED-CR" in log  # the lines are there ...
    for line in log.splitlines():
        assert not line.startswith("FORGED"), line  # ... but none starts a line of its own
    assert "op\\nFORGED-OP\\u2028also" in log


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_library_logging_a_callers_header_cannot_forge_a_line(tmp_path: Path,
                                                                form: str) -> None:
    """The MCP SDK logs an unknown ``Mcp-Session-Id`` as it came; a NEL (0x85) in it used to
    start a line of its own (str.splitlines and log shippers split there) in either format.
    Every record goes through the root handler's escaping, a library's as much as ours."""
    process = ServerProcess(tmp_path / "db", env={
        "SEMMEM_INSECURE": "true", "SEMMEM_TOKENS": "", "SEMMEM_LOG_LEVEL": "info",
        "SEMMEM_LOG_FORMAT": form}).start()
    try:
        process.wait_ready()
        with process.client() as c:
            r = c.post("/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                       headers={**JSON, "Accept": "application/json, text/event-stream",
                                "Mcp-Session-Id": b"sid\x85FORGED-NEL\x85FORGED-TWO"})
            assert r.status_code == 404, r.text  # the SDK's "unknown session", logged at info
        deadline = time.monotonic() + 10
        while "FORGED-TWO" not in process.output():
            assert time.monotonic() < deadline, "the SDK's line was not logged"
            time.sleep(0.05)
    finally:
        process.stop()
    lines = process.output().splitlines()  # splits at NEL too
    sdk = [line for line in lines if "FORGED-NEL" in line]
    assert len(sdk) == 1 and "sid\\x85FORGED-NEL\\x85FORGED-TWO" in (
        json.loads(sdk[0])["message"] if form == "json" else sdk[0]), sdk
    for line in lines:
        assert not line.startswith("FORGED"), line
    if form == "json":
        assert all(json.loads(line) for line in lines if line.startswith("{"))


# ----- 8. Unicode digits, nested bodies --------------------------------------------------------
def test_unicode_digits_are_not_numbers_anywhere(server: ServerProcess) -> None:
    """"²".isdigit() is true: a cursor, a Content-Length or console paging with one is a clean
    refusal (or the default), never a 500."""
    with server.client() as c:
        n = remember(c, "digits", "the code is 42")["n"]
        for cursor in ("c1.².abcdef0123", "c1.٣.abcdef0123", "c1.+1.abcdef0123"):
            r = send(c, tool("update", {"n": n, "text": "the code is 43"}, cursor=cursor,
                             partition="digits"))
            assert "cursor is not one semmem issued" in assert_error(
                r, 400, "invalid_request")["message"]
        signin = c.post("/console/signin", data={"token": ADMIN["Authorization"][7:]},
                        headers={"Origin": server.url}, follow_redirects=False)
        assert signin.status_code == 303
        cookies = signin.cookies
        for path in ("/console/?page=²", "/console/partition?p=digits&page=³",
                     "/console/partition?p=digits&done=added&n=²"):
            r = c.get(path, cookies=cookies)
            assert r.status_code == 200, (path, r.text[:300])
        r = c.get("/console/item?p=digits&n=²", cookies=cookies)
        assert r.status_code == 404 and "Traceback" not in r.text


def test_deeply_nested_admin_body_is_a_400(server: ServerProcess) -> None:
    """The admin PATCH body goes through the provider's JSON reader: nesting, duplicate keys
    and bad UTF-8 are 400s, not a RecursionError 500."""
    with server.client() as c:
        n = remember(c, "nested", "a fact to edit")["n"]
        params = {"partition": "nested", "n": n}
        headers = {**ADMIN, **JSON}
        for raw, words in ((b"[" * 30_000 + b"]" * 30_000, "nested too deeply"),
                           (b'{"text": "a", "text": "b"}', "duplicate key"),
                           (b'{"text": "\xff"}', "not UTF-8")):
            r = c.patch("/admin/items", params=params, content=raw, headers=headers)
            assert words in assert_error(r, 400, "invalid_request")["message"]
        r = c.patch("/admin/items", params=params, json={"text": "an edited fact"},
                    headers=headers)
        assert r.status_code == 200 and r.json()["item"]["text"] == "an edited fact"
        assert_error(c.get("/admin/items", params={"partition": "nested", "offset": "²"},
                           headers=ADMIN), 400, "invalid_request")


# ----- 9. request heads: size and time (issue 38) ----------------------------------------------
def _exchange(port: int, head: bytes, timeout: float = 30.0) -> bytes:
    """Send ``head`` in one write; everything the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def _envelope(answer: bytes) -> dict[str, object]:
    error: dict[str, object] = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    return error


def test_a_request_head_over_16_kib_is_refused_even_in_one_read(server: ServerProcess) -> None:
    """docs/security.md bounds a request head at 16 KiB; h11 bounded only an incomplete one,
    so a 120 KB head arriving in one read was served. Now 413 too_large in the contract's
    envelope, whole or trickled; a head just under the bound is served."""
    host = f"Host: 127.0.0.1:{server.port}\r\n".encode()

    def head(pad: int) -> bytes:
        return b"GET /healthz HTTP/1.1\r\n" + host + b"X-Pad: " + b"p" * pad + b"\r\n\r\n"

    served = _exchange(server.port, head(15_000))  # positive control: under the bound
    assert served.startswith(b"HTTP/1.1 200"), served[:200]
    for pad in (17_000, 120_000):
        answer = _exchange(server.port, head(pad))
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        error = _envelope(answer)
        assert error["code"] == "too_large" and "16384" in str(error["message"])
        assert b"Traceback" not in answer
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        start = b"GET /healthz HTTP/1.1\r\n" + host + b"X-Pad: "
        sock.sendall(start)
        for _ in range((16_384 - len(start)) // 1024):  # 1 KB at a time, up to the bound
            sock.sendall(b"p" * 1024)
        sock.sendall(b"p" * 1024)  # past it, still incomplete
        # wait for the answer before anything else: a write after the server's close would
        # reset the connection, answer and all
        assert select.select([sock], [], [], 10)[0], "no answer to a head past the bound"
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413") and _envelope(answer)["code"] == "too_large"


@pytest.mark.timeout(120)
def test_trickled_and_silent_heads_are_ended_at_their_deadline(tmp_path: Path) -> None:
    """A head arriving byte by byte had no deadline (150 of 150 trickling sockets stayed
    open): each now gets 408 request_timeout, and the connection is closed, once
    SEMMEM_HEAD_TIMEOUT_S has passed; so does a connection that sends nothing."""
    process = ServerProcess(tmp_path / "db", env={"SEMMEM_HEAD_TIMEOUT_S": "1"}).start()
    try:
        process.wait_ready()
        host = f"Host: 127.0.0.1:{process.port}\r\n".encode()
        socks = [socket.create_connection(("127.0.0.1", process.port), timeout=30)
                 for _ in range(60)]
        silent = socks[-1]
        for sock in socks[:-1]:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n" + host + b"X-Slow: ")
        answers: dict[socket.socket, bytes] = {s: b"" for s in socks}
        open_ = set(socks)
        started = time.monotonic()
        while open_:  # one byte per 0.2 s on each trickling socket, until the server ends it
            assert time.monotonic() - started < 30, f"{len(open_)} sockets still open"
            readable, _, _ = select.select(list(open_), [], [], 0.2)
            for sock in readable:
                try:
                    chunk = sock.recv(4096)
                except ConnectionResetError:
                    chunk = b""
                answers[sock] += chunk
                if not chunk:
                    open_.discard(sock)
            for sock in open_ - set(readable) - {silent}:
                with contextlib.suppress(OSError):
                    sock.send(b"s")
        elapsed = time.monotonic() - started
        for sock in socks:
            sock.close()
        assert 0.9 <= elapsed < 30
        for answer in answers.values():
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert _envelope(answer)["code"] == "request_timeout"
        with process.client() as c:  # the server is none the worse
            assert c.get("/healthz").status_code == 200
    finally:
        process.stop()
