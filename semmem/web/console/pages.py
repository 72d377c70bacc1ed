"""The console's read-only pages (GET) and signing in and out."""

from __future__ import annotations

from operator import methodcaller
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from semmem.contract import make_cursor
from semmem.errors import InvalidInput, NotFound
from semmem.protocol.jsonio import jsonl_chunks
from semmem.protocol.untrusted import ascii_int
from semmem.serving.guard import nameable
from semmem.web.console import data
from semmem.web.console.guard import (
    Refused,
    memory_of,
    read_form,
    require_post,
    require_session,
)
from semmem.web.console.render import PREFIX, page, url
from semmem.web.console.session import (
    Sessions,
    clear_cookie,
    plain_http_from_afar,
    read_session,
    same_origin,
    set_cookie,
)
from semmem.web.requests import runtime

# What a redirect after a write may announce: fixed texts, so a link cannot put words on the page.
FLASH = {
    "added": "Item #{n} added.",
    "existing": "That text is already item #{n}; nothing new was stored.",
    "existing_meta": "That text is already item #{n}; nothing new was stored and its "
                     "metadata was left as it is (edit the item to change it).",
    "edited": "Item #{n} saved.",
    "unchanged": "Nothing changed in item #{n}.",
    "forgot": "Item #{n} forgotten.",
    "merged": "Item #{n} merged: it stays on file, no longer recalled.",
    "deleted": "Partition deleted.",
    "sessionforgot": "Session forgotten: {n} piece(s).",
    "retention": "Policy changed; {n} fact(s) it expired were forgotten.",
    "signedout": "Signed out.",
}


def flash_of(request: Request) -> str | None:
    """The message a redirect asked for (``?done=…&n=…``), if it is one of ours."""
    template = FLASH.get(request.query_params.get("done", ""))
    if template is None:
        return None
    n = ascii_int(request.query_params.get("n", ""))
    return template.format(n="?" if n is None else n)


def query_int(request: Request, name: str, default: int = 1) -> int:
    """A positive integer query parameter; anything else means ``default``."""
    value = ascii_int(request.query_params.get(name, ""), max_digits=9)
    return value if value is not None and value > 0 else default


async def partition_param(request: Request) -> str:
    """The ``p`` query parameter: the partition key, exactly (any string but empty).

    Raises:
        InvalidInput: missing or empty, or past the bound and no such partition.
    """
    partition = request.query_params.get("p", "")
    if not partition:
        raise InvalidInput("no partition given (?p=…)")
    return await nameable(runtime(request), partition)


def sessions_of(request: Request) -> Sessions:
    """The console's signed-in sessions."""
    sessions: Sessions = request.app.state.sessions
    return sessions


def safe_next(target: str) -> str:
    """Where to go after signing in: a console path on this server, nothing else."""
    parts = urlsplit(target)
    if (target.startswith(PREFIX + "/") and not parts.scheme and not parts.netloc
            and "\\" not in target and "//" not in parts.path):
        return target
    return PREFIX + "/"


def redirect(target: str) -> RedirectResponse:
    """A 303: after a POST the browser GETs the target (no resubmission on reload)."""
    return RedirectResponse(target, 303)


# ----- signing in and out ---------------------------------------------------------------------
async def signin_form(request: Request) -> Response:
    """The sign-in page (straight on to the console when already signed in)."""
    nxt = safe_next(request.query_params.get("next", ""))
    session = read_session(request)
    if session is not None and runtime(request).auth.admin.matches(session.bearer):
        return redirect(nxt)
    return page(request, "signin.html", title="Sign in", next=nxt, flash=flash_of(request))


async def signin(request: Request) -> Response:
    """Check an admin token and keep it in the session cookie."""
    if not same_origin(request):
        raise Refused(403, "cross-site request refused: the Origin is not this console")
    if plain_http_from_afar(request):
        raise Refused(403, "over plain HTTP the console only accepts sign-ins from this machine; "
                           "use HTTPS (a TLS proxy) or an SSH tunnel to a loopback port")
    form = await read_form(request)
    token, nxt = form.get("token").strip(), safe_next(form.get("next"))
    auth = runtime(request).auth
    bearer = f"Bearer {token}"
    if token and auth.admin.matches(bearer):
        old = read_session(request)
        if old is not None:  # a fresh id at each sign-in (no fixation of an earlier one)
            sessions_of(request).end(old)
        response = redirect(nxt)
        set_cookie(response, request, sessions_of(request).start(token))
        return response
    if token and auth.tokens.matches(bearer):
        status, error = 403, "This is a provider token; the console needs an admin token."
    else:
        status, error = 401, "Wrong admin token."
    return page(request, "signin.html", status, title="Sign in", next=nxt, error=error)


async def signout(request: Request) -> Response:
    """End the session (here, so a copy of the cookie opens nothing either); drop the cookie."""
    session, _ = await require_post(request)
    sessions_of(request).end(session)
    response = redirect(url("/signin", done="signedout"))
    clear_cookie(response, request)
    return response


# ----- pages ----------------------------------------------------------------------------------
async def partitions(request: Request) -> Response:
    """Every partition (filtered by prefix), paged, with item counts and last update."""
    session = require_session(request)
    prefix = request.query_params.get("prefix", "")
    async with memory_of(request) as memory:
        rows, paging = await data.partitions_page(memory, prefix, query_int(request, "page"))
    return page(request, "partitions.html", title="Partitions", session=session, rows=rows,
                paging=paging, prefix=prefix, flash=flash_of(request))


async def partition(request: Request) -> Response:
    """One partition: counters, its items newest first (paged), and the search/recall forms."""
    session = require_session(request)
    key = await partition_param(request)
    async with memory_of(request) as memory:
        view = await data.partition_view(memory, key, query_int(request, "page"),
                                         request.query_params.get("meta", ""))
    return page(request, "partition.html", title=f"Partition {key}", session=session,
                view=view, flash=flash_of(request), search=None, preview=None,
                form={"q": "", "limit": 10, "text": "", "max_bytes": 2048})


async def similar(request: Request) -> Response:
    """Groups of facts that probably restate or supersede each other, to merge or forget."""
    session = require_session(request)
    key = await partition_param(request)
    async with memory_of(request) as memory:
        seq = (await memory.stats(key))["seq"]  # edits under it conflict if a fact changed
        found = await memory.similar(key)
    cursor = make_cursor(key, seq)
    return page(request, "similar.html", title=f"Similar facts in {key}", session=session,
                partition=key, groups=found, cursor=cursor, flash=flash_of(request))


async def item(request: Request) -> Response:
    """The edit form of one item."""
    session = require_session(request)
    key = await partition_param(request)
    n = query_int(request, "n", 0)
    async with memory_of(request) as memory:
        found, cursor = await data.item_view(memory, key, n)
    if found is None:
        raise NotFound(f"item {n} is not in this partition (never added, or forgotten)")
    return page(request, "item.html", title=f"Item #{n}", session=session, partition=key,
                item=found, cursor=cursor, values=data.edit_values(found), current=None)


async def export(request: Request) -> Response:
    """The partition as JSONL, as a download (the ``semmem import`` format)."""
    require_session(request)
    key = await partition_param(request)
    async with memory_of(request) as memory:
        items = await memory.exported(key)

    disposition = f'attachment; filename="{data.export_filename(key)}"'
    return StreamingResponse(jsonl_chunks(items, methodcaller("public")),
                             media_type="application/x-ndjson",
                             headers={"Content-Disposition": disposition})


async def delete_form(request: Request) -> Response:
    """Ask for the typed confirmation before deleting a partition."""
    session = require_session(request)
    key = await partition_param(request)
    async with memory_of(request) as memory:
        stats = await memory.stats(key)
    return page(request, "delete.html", title=f"Delete {key}", session=session, partition=key,
                count=stats["count"], phrase=data.confirm_phrase(key))
