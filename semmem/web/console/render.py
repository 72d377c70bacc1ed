"""Templates, the console's response headers, and its error pages (HTML, never JSON)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from semmem.errors import NotReady, SemmemError
from semmem.protocol.status import status_of
from semmem.protocol.untrusted import loggable

log = logging.getLogger("semmem.web")

PREFIX = "/console"
# No framing, no third-party anything: every byte the page uses comes from /console/static.
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def url(path: str, **params: Any) -> str:
    """A console URL with query parameters (``None`` values left out), safely encoded."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{PREFIX}{path}" + (f"?{query}" if query else "")


def when(ms: int | None) -> str:
    """Epoch milliseconds as a short UTC date-time for people."""
    if ms is None:
        return "–"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("semmem.web.console", "templates"),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,  # a misspelt variable is an error, not a blank
    )
    env.globals.update(url=url, when=when, console_root=PREFIX)
    return env


templates = Jinja2Templates(env=_environment())


def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
    """Render a template; ``session``, ``flash`` and ``error`` default to nothing."""
    context.setdefault("session", None)
    context.setdefault("flash", None)
    context.setdefault("error", None)
    return templates.TemplateResponse(request, name, context, status_code=status)


def error_page(request: Request, status: int, message: str) -> Response:
    """The error page; server-side failures show a generic message (details go to the log)."""
    titles = {400: "Bad request", 401: "Sign-in needed", 403: "Forbidden", 404: "Not found",
              409: "Conflict", 413: "Too large", 422: "Invalid input", 429: "Busy",
              503: "Unavailable"}
    return page(request, "error.html", status, title=titles.get(status, "Error"),
                message=message, code=status)


def semmem_error_page(request: Request, exc: SemmemError) -> Response:
    """The error page for a domain error (the same status table as the JSON API)."""
    status = status_of(exc)
    message = exc.message
    if status >= 500 and not isinstance(exc, NotReady):
        log.warning("console: %d %s: %s", status, exc.code, loggable(exc.message, 1000))
        message = "memory is unavailable right now; retry shortly (details are in the server log)"
    response = error_page(request, status, message)
    if status in (429, 503):
        response.headers["Retry-After"] = "1" if status == 429 else "2"
    return response


class ConsoleHeaders:
    """Adds the console's headers to every response and turns a crash into a quiet 500 page.

    Pure ASGI (not ``BaseHTTPMiddleware``), so streamed exports pass through untouched. It
    catches what the route let escape instead of re-raising: the outer app would otherwise
    answer again, in JSON, after this answer started.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the console app with the headers added."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                have = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()
                         if k.lower().encode() not in have]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            log.exception("console: internal error on %s %s",
                          loggable(str(scope.get("method")), 20), loggable(str(scope.get("path"))))
            if not started:
                body = ("<!doctype html><meta charset=utf-8><title>Error · semmem console</title>"
                        "<h1>Internal error</h1><p>The server log has the details.</p>")
                await HTMLResponse(body, 500, headers=HEADERS)(scope, receive, send)
