"""The console's conversation sessions: a partition's sessions, one opened (its messages in
order, each piece with its number), one forgotten whole through the forget path."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from semmem.conversations.sessions import Sessions
from semmem.errors import InvalidInput
from semmem.web.console.actions import partition_field
from semmem.web.console.guard import memory_of, require_post, require_session
from semmem.web.console.pages import flash_of, partition_param, redirect
from semmem.web.console.render import page, url


async def sessions(request: Request) -> Response:
    """A partition's sessions, the latest said first."""
    session = require_session(request)
    key = await partition_param(request)
    async with memory_of(request) as memory:
        found = await Sessions(memory).list(key)
    return page(request, "sessions.html", title=f"Sessions in {key}", session=session,
                partition=key, sessions=found, opened=None, flash=flash_of(request))


async def opened(request: Request) -> Response:
    """One session's messages in order (``?p=…&s=…``)."""
    session = require_session(request)
    key = await partition_param(request)
    sid = request.query_params.get("s", "")
    if not sid:
        raise InvalidInput("no session given (?s=…)")
    async with memory_of(request) as memory:
        shown = await Sessions(memory).open(key, sid)
    return page(request, "sessions.html", title=f"Session {sid}", session=session,
                partition=key, sessions=None, opened=shown, flash=None)


async def forget(request: Request) -> Response:
    """Forget a session whole (the form names it in ``s``)."""
    _, form = await require_post(request)
    key = await partition_field(request, form)
    sid = form.fields.get("s", "")
    if not sid:
        raise InvalidInput("no session given")
    async with memory_of(request) as memory:
        gone = await Sessions(memory).forget(key, sid)
    return redirect(url("/sessions", p=key, done="sessionforgot", n=len(gone["forgotten"])))
