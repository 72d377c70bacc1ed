"""Request ids: ``X-Request-Id`` taken from the request (when it is a plain token) or made,
echoed in the response, and carried by every log line of the request (``serving/logs.py``).

The outermost middleware, so the access line carries the id too. An incoming ``traceparent``
names the trace in the log lines even when this process does not trace.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from semmem.serving import logs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HEADER = b"x-request-id"
# A caller's id is kept only when it cannot disturb a log line or a header.
_ID = re.compile(rb"^[A-Za-z0-9._:/+=@-]{1,128}$")
_TRACEPARENT = re.compile(rb"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).strip()
    return None


def request_id(given: bytes | None) -> str:
    """The caller's id if it is a plain token of at most 128 characters, else a new one."""
    if given is not None and _ID.match(given):
        return given.decode("ascii")
    return uuid.uuid4().hex


def trace_of(traceparent: bytes | None) -> str | None:
    """The trace id of a W3C ``traceparent`` header, if it is one (and not all zeros)."""
    found = _TRACEPARENT.match(traceparent or b"")
    if found is None or found.group(1) == b"0" * 32:
        return None
    return found.group(1).decode("ascii")


class RequestIds:
    """ASGI middleware: the request's id for its log lines, echoed as ``X-Request-Id``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request with its id current (lifespan passes straight through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        info = logs.RequestInfo(request_id(_header(scope, HEADER)),
                                trace_of(_header(scope, b"traceparent")))
        echoed = info.request_id.encode("ascii")

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != HEADER]
                message["headers"] = [*headers, (HEADER, echoed)]
            await send(message)

        token = logs.begin(info)
        try:
            await self.app(scope, receive, sending)
        finally:
            logs.end(token)
