"""The console's retention page: a partition's policy, a preview, the change, the facts due."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from semmem.errors import InvalidInput
from semmem.lifecycle import policies
from semmem.protocol.status import status_of
from semmem.web.console.actions import partition_field
from semmem.web.console.guard import memory_of, require_post, require_session
from semmem.web.console.pages import flash_of, partition_param, redirect
from semmem.web.console.render import page, url
from semmem.web.console.session import Session


async def _page(request: Request, session: Session, partition: str, *, status: int = 200,
                **extra: Any) -> Response:
    async with memory_of(request) as memory:
        shown = await policies.due(memory, partition)
    return page(request, "retention.html", status, title=f"Retention of {partition}",
                session=session, partition=partition, policy=shown, **extra)


async def show(request: Request) -> Response:
    """The partition's policy (default, override, effect) and its facts due, soonest first."""
    session = require_session(request)
    return await _page(request, session, await partition_param(request), flash=flash_of(request),
                       preview=None, value="")


async def preview(request: Request) -> Response:
    """The page with how many facts a policy would expire now (nothing changes)."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    value = form.get("policy").strip()
    try:
        async with memory_of(request) as memory:
            found = await policies.preview(memory, value, key)
    except InvalidInput as exc:
        return await _page(request, session, key, status=status_of(exc), preview=None,
                           value=value, error=f"Preview: {exc.message}")
    return await _page(request, session, key, preview=found, value=value)


async def set_policy(request: Request) -> Response:
    """Set the partition's policy; what it expires now is forgotten at once."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    value = form.get("policy").strip()
    try:
        async with memory_of(request) as memory:
            done = await policies.set_policy(memory, key, value)
    except InvalidInput as exc:
        return await _page(request, session, key, status=status_of(exc), preview=None,
                           value=value, error=f"Not changed: {exc.message}")
    return redirect(url("/retention", p=key, done="retention", n=len(done["expired"])))
