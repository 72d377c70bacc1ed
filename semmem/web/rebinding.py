"""DNS-rebinding defence for ``--insecure``: only loopback ``Host`` and ``Origin`` headers.

Without a token to stop them, a web page whose name was rebound to 127.0.0.1 could reach a
loopback server from the browser: its requests carry the attacker's name in ``Host`` (and its
own origin in ``Origin``). Served insecure, every route (provider, admin, console, probes,
``/mcp``) answers such a request 403 before anything else runs. With tokens a proxy may front
the server under any host name, so the check is off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from semmem.protocol.status import envelope
from semmem.web.net import is_loopback

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _host_name(value: str) -> str | None:
    try:
        return urlsplit(value).hostname
    except ValueError:  # an unbalanced "[" and the like
        return None


def loopback_request(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether ``Host`` names a loopback host and ``Origin``, if sent, a loopback origin."""
    host = origin = None
    for key, value in headers:
        name = key.lower()
        if name == b"host":
            host = value.decode("latin-1")
        elif name == b"origin":
            origin = value.decode("latin-1")
    if host is None or not is_loopback(_host_name(f"//{host}") or ""):
        return False
    if origin is None:
        return True
    parts = urlsplit(origin) if origin != "null" else None
    return (parts is not None and parts.scheme in ("http", "https")
            and is_loopback(_host_name(origin) or ""))


class LoopbackOnly:
    """ASGI middleware: refuse (403) any HTTP request whose Host or Origin is not loopback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass loopback requests (and lifespan) through; refuse the rest."""
        if scope["type"] != "http" or loopback_request(list(scope.get("headers", ()))):
            await self.app(scope, receive, send)
            return
        body = envelope("forbidden", "served without authentication (--insecure): only "
                        "requests to a loopback host name from a loopback origin are answered")
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
