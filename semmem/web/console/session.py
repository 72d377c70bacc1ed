"""Console sessions: a random session id in the cookie, the session itself kept server-side.

The cookie holds only ``v2.<id>``, 256 random bits; the admin token the browser signed in with
stays in this process's memory, never in the cookie. Signing out ends the session here (the
cookie is then worthless), the 12-hour lifetime is enforced here, not by the browser, and a
session stops working the moment its token is removed from the configuration. Sessions do not
survive a restart: signing in again is the price of not writing credentials to disk. The CSRF
token is an HMAC of the session id under a per-process key, so it differs per session and
cannot be computed without the (HttpOnly) cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from semmem.web.net import is_loopback

COOKIE = "semmem_console"
COOKIE_PATH = "/console"
MAX_AGE_S = 12 * 3600
MAX_SESSIONS = 1000  # signed-in browsers kept; signing in past it ends the oldest session
CSRF_FIELD = "csrf"
_PREFIX = "v2."


@dataclass(frozen=True)
class Session:
    """A signed-in browser: its random id (the cookie), and the admin token it presented."""

    id: str
    token: str
    csrf: str  # the CSRF token of this session (a hidden field in every form)
    started: float  # ``time.monotonic()`` at sign-in

    @property
    def bearer(self) -> str:
        """The token as an ``Authorization`` header value, for ``ProviderAuth``."""
        return f"Bearer {self.token}"

    def csrf_matches(self, given: str | None) -> bool:
        """Whether a submitted CSRF token is this session's (constant time)."""
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"),
                                                         self.csrf.encode("ascii"))

    @property
    def cookie(self) -> str:
        """The cookie value: the session id, nothing else."""
        return _PREFIX + self.id


class Sessions:
    """The signed-in sessions of one console (at most ``limit``; the oldest ends first)."""

    def __init__(self, max_age_s: float = MAX_AGE_S, limit: int = MAX_SESSIONS) -> None:
        self.max_age_s = max_age_s
        self.limit = limit
        self._key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._by_id: OrderedDict[str, Session] = OrderedDict()

    def start(self, token: str) -> Session:
        """A new session for a token that has just been checked."""
        sid = secrets.token_urlsafe(32)
        csrf = hmac.new(self._key, b"semmem-console-csrf\0" + sid.encode("ascii"),
                        hashlib.sha256).hexdigest()
        session = Session(sid, token, csrf, time.monotonic())
        with self._lock:
            self._by_id[sid] = session
            while len(self._by_id) > self.limit:
                self._by_id.popitem(last=False)
        return session

    def get(self, cookie: str | None) -> Session | None:
        """The live session a cookie names (an expired one is ended on the way)."""
        if not cookie or not cookie.startswith(_PREFIX):
            return None
        sid = cookie.removeprefix(_PREFIX)
        with self._lock:
            session = self._by_id.get(sid)
            if session is not None and time.monotonic() - session.started > self.max_age_s:
                del self._by_id[sid]
                return None
            return session

    def end(self, session: Session) -> None:
        """Sign a session out: its cookie opens nothing from now on."""
        with self._lock:
            self._by_id.pop(session.id, None)


def read_session(request: Request) -> Session | None:
    """The live session the request's cookie names, if any.

    Whether its token is still an admin token is for the caller to check.
    """
    sessions: Sessions = request.app.state.sessions
    return sessions.get(request.cookies.get(COOKIE))


def host_of(request: Request) -> str:
    """The host name the browser used (``Host`` header, port and brackets removed)."""
    host = request.headers.get("host", "")
    return urlsplit(f"//{host}").hostname or ""


def needs_secure(request: Request) -> bool:
    """Whether the cookie must be ``Secure``.

    Always, except on plain HTTP to a loopback host name: browsers do not send a ``Secure``
    cookie back over ``http://127.0.0.1``, and there the cookie never crosses a network.
    """
    return request.url.scheme == "https" or not is_loopback(host_of(request))


def plain_http_from_afar(request: Request) -> bool:
    """A plain-HTTP request from another machine: the token would cross a network in clear."""
    client = request.client.host if request.client else ""
    return request.url.scheme != "https" and not is_loopback(client)


def same_origin(request: Request) -> bool:
    """Whether a POST comes from a console page: its ``Origin`` (or ``Referer``) names our host.

    Only the host and port are compared, not the scheme: behind a TLS-terminating proxy the
    browser's origin is ``https://…`` while this server sees plain HTTP.
    """
    source = request.headers.get("origin") or request.headers.get("referer")
    if not source or source == "null":
        return False
    netloc = urlsplit(source).netloc
    return bool(netloc) and netloc.lower() == request.headers.get("host", "").lower()


def set_cookie(response: Response, request: Request, session: Session) -> None:
    """Store the session: HttpOnly, SameSite=Strict, Secure unless plain-HTTP loopback."""
    response.set_cookie(COOKIE, session.cookie, max_age=MAX_AGE_S, path=COOKIE_PATH,
                        secure=needs_secure(request), httponly=True, samesite="strict")


def clear_cookie(response: Response, request: Request) -> None:
    """Drop the session cookie."""
    response.delete_cookie(COOKIE, path=COOKIE_PATH, secure=needs_secure(request),
                           httponly=True, samesite="strict")
