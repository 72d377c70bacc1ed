"""Console sessions: the admin token in a cookie, a per-session CSRF token, the Origin check.

The cookie holds ``v1.<issued>.<nonce>.<token>``: the admin token itself (base64url), so a
session keeps working across restarts and stops working the moment its token is removed from
the configuration, with no session store. Each sign-in draws a fresh nonce; the CSRF token is
an HMAC of that nonce keyed by the admin token, so it differs per session and cannot be
computed without the (HttpOnly) cookie.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from semmem.web.net import is_loopback

COOKIE = "semmem_console"
COOKIE_PATH = "/console"
MAX_AGE_S = 12 * 3600
CSRF_FIELD = "csrf"


@dataclass(frozen=True)
class Session:
    """A signed-in browser: the admin token it presented and its sign-in nonce."""

    token: str
    nonce: str
    issued: int

    @property
    def bearer(self) -> str:
        """The token as an ``Authorization`` header value, for ``ProviderAuth``."""
        return f"Bearer {self.token}"

    @property
    def csrf(self) -> str:
        """The CSRF token of this session (a hidden field in every form)."""
        mac = hmac.new(self.token.encode("utf-8", "surrogateescape"),
                       b"semmem-console-csrf\0" + self.nonce.encode("ascii"), hashlib.sha256)
        return mac.hexdigest()

    def csrf_matches(self, given: str | None) -> bool:
        """Whether a submitted CSRF token is this session's (constant time)."""
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"),
                                                         self.csrf.encode("ascii"))

    def encode(self) -> str:
        """The cookie value."""
        raw = base64.urlsafe_b64encode(self.token.encode("utf-8", "surrogateescape"))
        return f"v1.{self.issued}.{self.nonce}.{raw.decode('ascii').rstrip('=')}"


def new_session(token: str) -> Session:
    """A session for a token that has just been checked."""
    return Session(token, secrets.token_urlsafe(16), int(time.time()))


def read_session(request: Request) -> Session | None:
    """The session the request's cookie names, if the cookie is well formed and not expired.

    Whether its token is still an admin token is for the caller to check.
    """
    value = request.cookies.get(COOKIE)
    if not value:
        return None
    parts = value.split(".")
    if len(parts) != 4 or parts[0] != "v1" or not parts[1].isdigit() or not parts[2]:
        return None
    issued = int(parts[1])
    if not 0 <= time.time() - issued <= MAX_AGE_S:
        return None
    try:
        token = base64.urlsafe_b64decode(parts[3] + "=" * (-len(parts[3]) % 4)).decode(
            "utf-8", "surrogateescape")
    except (binascii.Error, ValueError):
        return None
    return Session(token, parts[2], issued) if token else None


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
    response.set_cookie(COOKIE, session.encode(), max_age=MAX_AGE_S, path=COOKIE_PATH,
                        secure=needs_secure(request), httponly=True, samesite="strict")


def clear_cookie(response: Response, request: Request) -> None:
    """Drop the session cookie."""
    response.delete_cookie(COOKIE, path=COOKIE_PATH, secure=needs_secure(request),
                           httponly=True, samesite="strict")
