"""A recording HTTP proxy on loopback that can lose replies: every attempt a client makes is
logged with its bytes and the answer; ``plan`` scripts the next attempts' fate.

``"drop"`` forwards the request, lets the server answer (and commit), then closes the
connection without a reply: the client sees a transport failure although the write happened.
``(status, headers)`` answers that status with an error envelope and does not forward.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

Step = str | tuple[int, dict[str, str]]


@dataclass
class Attempt:
    """One request as the proxy saw it, and what became of it."""

    at: float
    path: str
    body: bytes
    status: int | None = None  # what the server (or the plan) answered
    answer: bytes = b""
    delivered: bool = True

    def json(self) -> Any:
        """The request body, decoded."""
        return json.loads(self.body) if self.body else None


@dataclass
class Proxy:
    """``Proxy(upstream).start()``; ``url`` is where clients go."""

    upstream: str
    plan: list[Step] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)

    def start(self) -> Proxy:
        """Listen on a free loopback port, in a thread."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy.handle(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                proxy.handle(self, self.rfile.read(length))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http = httpx.Client(base_url=self.upstream, timeout=30.0)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        """Base URL of the proxy."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        """Forward, answer from the plan, or drop the reply, and record the attempt."""
        attempt = Attempt(time.monotonic(), handler.path, body)
        self.attempts.append(attempt)
        step = self.plan.pop(0) if self.plan else "forward"
        if isinstance(step, tuple):
            status, headers = step
            content = json.dumps({"error": {"code": "unavailable" if status >= 500 else
                                            "overloaded", "message": "injected"}}).encode()
            attempt.status, attempt.answer = status, content
            self._reply(handler, status, {**headers, "Content-Type": "application/json"},
                        content)
            return
        forwarded = {k: v for k, v in handler.headers.items()
                     if k.lower() in ("authorization", "content-type", "accept")}
        reply = self._http.request(handler.command, handler.path, content=body or None,
                                   headers=forwarded)
        attempt.status, attempt.answer = reply.status_code, reply.content
        if step == "drop":
            attempt.delivered = False
            handler.close_connection = True  # the server answered; the client never hears it
            return
        headers = {k: v for k, v in reply.headers.items()
                   if k.lower() in ("content-type", "retry-after")}
        self._reply(handler, reply.status_code, headers, reply.content)

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str],
               content: bytes) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        handler.wfile.write(content)

    def posts(self) -> list[Attempt]:
        """The POST attempts (provider calls) so far."""
        return [a for a in self.attempts if a.body]

    def stop(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()
        self._http.close()
