"""A counting, delaying, fault-injecting HTTP proxy in front of an S3-compatible server (moto).

    python -m tests.support.s3proxy --upstream http://127.0.0.1:5000 --port 0 --delay-ms 20

or in-process:

    proxy = S3Proxy("http://127.0.0.1:5000", delay_ms=20).start()
    opts = {..., "aws_endpoint": proxy.endpoint, "allow_http": "true"}
    proxy.reset(); <do something>; print(proxy.summary())

Every request is classified as ``METHOD kind`` where kind is the Lance directory the key is in
(``_versions``, ``_transactions``, ``_deletions``, ``data``, ``_indices``, ...) and a GET with
``list-type=2`` is ``LIST <prefix dir>``. ``delay_ms`` is slept before a request is forwarded
(a round trip to a remote object store). Faults are rules matched in order, each applied
``times`` times after ``skip`` matches:

- ``status``: answer with an S3 error (default 503 SlowDown) without forwarding;
- ``reset_before``: close the connection (RST) without forwarding;
- ``reset_mid_body``: forward, send the status, headers and half the body, then RST;
- ``drop_after_success``: forward (the request takes effect upstream), then RST with no reply;
- ``hold``: forward, then hold the reply until ``release()`` (a writer paused right after the
  request took effect: ``held`` is set while one waits); ``hold_drop``: the same, then RST
  with no reply (a commit that landed, its outcome unknown to the writer).

Out of process, ``GET /__proxy/stats``, ``POST /__proxy/reset``, ``POST /__proxy/config``
(JSON: ``delay_ms``, ``faults``) drive the same state. Only loopback is meant to be used.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import json
import random
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
       "upgrade"}
DIRS = ("_versions", "_transactions", "_deletions", "_indices", "data", "_refs", "_latest")


def kind_of(method: str, target: str) -> str:
    """``METHOD kind`` of one S3 request (path-style: /bucket/key...)."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    path = unquote(parts.path)
    if method == "GET" and "list-type" in query:
        prefix = query.get("prefix", [""])[0]
        return f"LIST {_dir(prefix, trailing=True)}"
    if method == "POST" and "delete" in query:
        return "DELETE batch"
    if "uploads" in query or "uploadId" in query:
        return f"{method} multipart"
    return f"{method} {_dir(path)}"


def _dir(path: str, trailing: bool = False) -> str:
    segs = [s for s in path.split("/") if s]
    for s in reversed(segs if trailing else segs[:-1]):
        for d in DIRS:
            if s == d or s.startswith(d):
                return d
    if segs and segs[-1].startswith("_latest"):
        return "_latest"
    return "other"


@dataclass
class Fault:
    """One fault rule: which requests (``method``, regex on the path) and what happens."""

    action: str  # status | reset_before | reset_mid_body | drop_after_success | hold[_drop]
    method: str | None = None
    path: str | None = None  # regex searched in the request target
    times: int = 1
    skip: int = 0
    status: int = 503
    code: str = "SlowDown"
    rate: float = 0.0  # > 0: each matching request is faulted with this probability instead
    seed: int = 0
    seen: int = 0
    applied: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    def take(self, method: str, target: str) -> bool:
        """Whether this request gets the fault (counting the match)."""
        if self.method and self.method != method:
            return False
        if self.path and not re.search(self.path, target):
            return False
        self.seen += 1
        if self.rate:
            hit = self._rng.random() < self.rate
        else:
            hit = self.skip < self.seen and self.applied < self.times
        self.applied += hit
        return hit


@dataclass
class Entry:
    t: float
    method: str
    kind: str
    target: str
    status: int
    sent: int  # request body bytes
    received: int  # response body bytes
    fault: str = ""
    range: str = ""
    ms: float = 0.0  # time in the proxy, delay included


@dataclass
class State:
    delay_ms: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    log: list[Entry] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: threading.Event = field(default_factory=threading.Event)  # a reply is being held
    release: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body leave in separate writes: without this, Nagle + the client's
        # delayed ACK add ~40 ms to every reply
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _upstream(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self, "_conn", None)
        if conn is None:
            host, port = self.server.upstream
            conn = http.client.HTTPConnection(host, port, timeout=60)
            self._conn: http.client.HTTPConnection | None = conn
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _rst(self) -> None:
        """Close the client connection with a TCP reset (no FIN, no reply)."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def _control(self, body: bytes) -> None:
        st = self.server.state
        if self.path.startswith("/__proxy/stats"):
            payload = json.dumps(summary(st.log)).encode()
        elif self.path.startswith("/__proxy/reset"):
            with st.lock:
                st.log.clear()
            payload = b"{}"
        elif self.path.startswith("/__proxy/config"):
            cfg = json.loads(body or b"{}")
            with st.lock:
                if "delay_ms" in cfg:
                    st.delay_ms = float(cfg["delay_ms"])
                if "faults" in cfg:
                    st.faults = [Fault(**f) for f in cfg["faults"]]
            payload = b"{}"
        else:
            payload = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _handle(self) -> None:
        body = self._body()
        if self.path.startswith("/__proxy/"):
            self._control(body)
            return
        st = self.server.state
        method, target = self.command, self.path
        kind = kind_of(method, target)
        with st.lock:
            fault = next((f for f in st.faults if f.take(method, target)), None)
            delay = st.delay_ms
        if delay:
            time.sleep(delay / 1000)
        entry = Entry(time.time(), method, kind, target, 0, len(body), 0,
                      fault.action if fault else "", self.headers.get("Range", ""))
        with st.lock:
            st.log.append(entry)
        if fault is not None and fault.action == "status":
            xml = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{fault.code}</Code>"
                   f"<Message>injected</Message></Error>").encode()
            entry.status = fault.status
            self.send_response(fault.status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(xml)))
            self.end_headers()
            self.wfile.write(xml)
            return
        if fault is not None and fault.action == "reset_before":
            self._rst()
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        for attempt in range(2):  # a kept-alive upstream connection may have gone stale
            conn = self._upstream()
            try:
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._conn = None
                if attempt:
                    raise
        entry.status, entry.received = resp.status, len(data)
        entry.ms = (time.time() - entry.t) * 1000 + delay
        if fault is not None and fault.action == "drop_after_success":
            self._rst()
            return
        if fault is not None and fault.action in ("hold", "hold_drop"):
            self.server.state.held.set()
            self.server.state.release.wait(120)
            if fault.action == "hold_drop":
                self._rst()
                return
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() in HOP or k.lower() == "content-length":
                continue
            self.send_header(k, v)
        length = resp.getheader("Content-Length") if method == "HEAD" else str(len(data))
        self.send_header("Content-Length", length or "0")
        self.end_headers()
        if method == "HEAD":
            return
        if fault is not None and fault.action == "reset_mid_body":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._rst()
            return
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._handle()

    do_PUT = do_POST = do_HEAD = do_DELETE = do_GET


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a timeout, our own resets) is not worth a traceback."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    def __init__(self, addr: tuple[str, int], upstream: tuple[str, int], state: State) -> None:
        super().__init__(addr, _Handler)
        self.upstream = upstream
        self.state = state


def summary(log: list[Entry]) -> dict[str, Any]:
    """Counts by ``METHOD kind``, by method, and in all."""
    by_kind = collections.Counter(e.kind for e in log)
    by_method = collections.Counter(e.kind.split()[0] for e in log)
    return {"total": len(log), "by_method": dict(sorted(by_method.items())),
            "by_kind": dict(sorted(by_kind.items()))}


class S3Proxy:
    """The proxy, run on a daemon thread of this process."""

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0,
                 delay_ms: float = 0.0) -> None:
        u = urlsplit(upstream)
        self.state = State(delay_ms=delay_ms)
        self.server = _Server((host, port), (u.hostname or "127.0.0.1", u.port or 80),
                              self.state)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def upstream_endpoint(self) -> str:
        """The store it forwards to, for a replica that talks to the store directly."""
        host, port = self.server.upstream
        return f"http://{host}:{port}"

    def start(self) -> S3Proxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reset(self) -> None:
        with self.state.lock:
            self.state.log.clear()

    @property
    def delay_ms(self) -> float:
        return self.state.delay_ms

    @delay_ms.setter
    def delay_ms(self, value: float) -> None:
        self.state.delay_ms = value

    def release(self) -> None:
        """Let held replies go (and every later ``hold`` pass at once)."""
        self.state.release.set()

    def faults(self, *rules: Fault) -> None:
        with self.state.lock:
            self.state.faults = list(rules)

    def entries(self) -> list[Entry]:
        with self.state.lock:
            return list(self.state.log)

    def summary(self) -> dict[str, Any]:
        return summary(self.entries())

    def line(self) -> str:
        """One compact line: total and counts by kind."""
        s = self.summary()
        return f"{s['total']:3d}  " + ", ".join(f"{k} {v}" for k, v in s["by_kind"].items())


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--delay-ms", type=float, default=0.0)
    a = p.parse_args()
    proxy = S3Proxy(a.upstream, a.host, a.port, a.delay_ms)
    print(proxy.endpoint, flush=True)
    proxy.server.serve_forever()


if __name__ == "__main__":
    main()
