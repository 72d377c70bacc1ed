"""One log line per HTTP request: method, path, status, time — never the query string.

In JSON logs the line also carries them as fields: ``method``, ``route`` (the matched route's
template, ``null`` when none matched), ``status`` and ``duration_ms``.

Replaces uvicorn's access log, which prints the query string, and the admin API carries the
partition in it (``/admin/items?partition=…``): partition keys name owners' namespaces and stay
out of the log, like fact texts and tokens. Probes log at debug level (they poll).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from semmem.protocol.untrusted import loggable
from semmem.serving.logs import FIELDS

log = logging.getLogger("semmem.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
PROBES = ("/healthz", "/readyz", "/metrics")


class AccessLog:
    """ASGI middleware logging each HTTP request once it is answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request through the app, then log it (lifespan passes straight through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0
        root = str(scope.get("root_path", ""))

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            path = str(scope.get("path", ""))
            level = logging.DEBUG if path in PROBES else logging.INFO
            method = loggable(str(scope.get("method", "-")), 20)
            ms = (time.perf_counter() - started) * 1000
            fields = {"method": method, "route": _route(scope, root), "status": status,
                      "duration_ms": round(ms, 1)}
            # The path is the caller's (a %0A in it would forge a line): escaped and cut.
            log.log(level, "%s %s %d %.1f ms", method, loggable(path), status, ms,
                    extra={FIELDS: fields})


def _route(scope: Scope, root: str) -> str | None:
    """The template of the route that served the request (a mount's prefix before it), not
    the caller's path: a route names no partition or item."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if not isinstance(template, str):
        return None
    return str(scope.get("root_path", ""))[len(root):] + template
