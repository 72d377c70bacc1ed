"""What every console route checks: a signed-in admin, and for POSTs the origin and CSRF token.

Also the form codec (URL-encoded, bounded) and the memory slot (readiness, concurrency limit,
metrics) shared by the routes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qs

from starlette.requests import Request

from semmem.errors import InvalidInput
from semmem.memory import Memory
from semmem.protocol.untrusted import ascii_int
from semmem.serving.guard import served
from semmem.web.bodies import read_body
from semmem.web.console.session import CSRF_FIELD, Session, read_session, same_origin
from semmem.web.requests import runtime

MAX_FORM = 64 * 1024
MAX_FIELDS = 32


class SignInRequired(Exception):
    """No valid session: the browser is sent to the sign-in page."""


class Refused(Exception):
    """A request the console refuses outright (wrong kind of token, cross-site POST)."""

    def __init__(self, status: int, message: str, *, end_session: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.end_session = end_session  # the cookie is worthless: drop it with the answer


class Form:
    """A submitted URL-encoded form: one string per field."""

    def __init__(self, fields: dict[str, str]) -> None:
        self.fields = fields

    def get(self, name: str, default: str = "") -> str:
        """A field's value, with browsers' CRLF line breaks turned back into LF."""
        return self.fields.get(name, default).replace("\r\n", "\n")

    def integer(self, name: str, low: int, high: int, default: int | None = None) -> int:
        """A field that must hold an integer in ``low..high``.

        Raises:
            InvalidInput: missing (without default), not an integer, or out of range.
        """
        raw = self.get(name).strip()
        if not raw and default is not None:
            return default
        value = ascii_int(raw.removeprefix("-"))
        if value is not None and raw.startswith("-"):
            value = -value
        if value is None or not low <= value <= high:
            raise InvalidInput(f"{name} must be a whole number from {low} to {high}")
        return value


def require_session(request: Request) -> Session:
    """The signed-in admin session.

    Raises:
        SignInRequired: no cookie, a malformed or expired one, or a token no longer configured.
        Refused: the cookie holds a provider (non-admin) token.
    """
    session = read_session(request)
    if session is None:
        raise SignInRequired
    auth = runtime(request).auth
    if auth.admin.matches(session.bearer):
        return session
    request.app.state.sessions.end(session)  # its token was removed or demoted: for good
    if auth.tokens.matches(session.bearer):
        raise Refused(403, "this is a provider token; the console needs an admin token",
                      end_session=True)
    raise SignInRequired


async def read_form(request: Request) -> Form:
    """The request's URL-encoded form (at most 64 KiB, 32 fields).

    Raises:
        InvalidInput: another media type, not UTF-8, or too many fields.
        TooLarge: over 64 KiB.
    """
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise InvalidInput("the console accepts only URL-encoded forms")
    body = await read_body(request, MAX_FORM, timeout=runtime(request).settings.body_timeout_s)
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True,
                          max_num_fields=MAX_FIELDS, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("the form is not UTF-8 or has too many fields") from None
    return Form({k: v[0] for k, v in parsed.items()})


async def require_post(request: Request) -> tuple[Session, Form]:
    """A signed-in, same-origin POST carrying this session's CSRF token, and its form.

    Raises:
        SignInRequired, Refused: as for ``require_session``; Refused also for a cross-site
            request or a missing/wrong CSRF token.
    """
    if not same_origin(request):
        raise Refused(403, "cross-site request refused: the Origin is not this console")
    session = require_session(request)
    form = await read_form(request)
    if not session.csrf_matches(form.fields.get(CSRF_FIELD)):
        raise Refused(403, "the form's CSRF token is missing or belongs to another session; "
                           "reload the page and try again")
    return session, form


@asynccontextmanager
async def memory_of(request: Request) -> AsyncIterator[Memory]:
    """The memory core for one console call: ready, within the concurrency limit, counted.

    Raises:
        NotReady: still loading. Overloaded: no free slot.
    """
    async with served(runtime(request), "admin") as call:
        yield call.memory
