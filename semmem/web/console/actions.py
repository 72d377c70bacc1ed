"""The console's forms (POST): add, edit and forget items, search, recall preview, delete.

Writes answer with a 303 to a page (so reloading never repeats them); searches and recall
previews are POSTs too, to keep memory text out of URLs, browser history and access logs.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from semmem.contract import MAX_RECALL_BYTES, MAX_SEARCH_LIMIT
from semmem.errors import Conflict, InvalidInput, NotFound
from semmem.items import Item
from semmem.items.metadata import Scalar, canonical
from semmem.protocol.fitting import fit_recall
from semmem.protocol.jsonio import dumps
from semmem.protocol.status import status_of
from semmem.serving.guard import nameable
from semmem.web.console import data
from semmem.web.console.data import EDITABLE
from semmem.web.console.guard import Form, memory_of, require_post
from semmem.web.console.pages import redirect
from semmem.web.console.render import page, url
from semmem.web.console.session import Session
from semmem.web.requests import runtime


async def partition_field(request: Request, form: Form) -> str:
    """The form's partition key, exactly.

    Raises:
        InvalidInput: missing or empty, or past the bound and no such partition.
    """
    partition = form.fields.get("p", "")
    if not partition:
        raise InvalidInput("no partition given")
    return await nameable(runtime(request), partition)


async def _partition_page(request: Request, session: Session, partition: str, *,
                          form: dict[str, Any], search: dict[str, Any] | None = None,
                          preview: dict[str, Any] | None = None, error: str | None = None,
                          status: int = 200) -> Response:
    async with memory_of(request) as memory:
        view = await data.partition_view(memory, partition, 1)
    return page(request, "partition.html", status, title=f"Partition {partition}",
                session=session, view=view, form=form, search=search, preview=preview,
                error=error)


def _form_values(form: Form) -> dict[str, Any]:
    return {"q": form.get("q"), "limit": form.get("limit") or 10, "text": form.get("text"),
            "max_bytes": form.get("max_bytes") or 2048, "add_text": form.get("add_text"),
            "add_note": form.get("add_note"), "add_meta": form.get("add_meta")}


async def add(request: Request) -> Response:
    """Remember a text (with an optional note and metadata) in the partition."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    note = form.get("add_note").strip()
    try:
        metadata = data.metadata_of(form.get("add_meta"))
        async with memory_of(request) as memory:
            result = await memory.remember(key, form.get("add_text"),
                                           attrs={"note": note} if note else None,
                                           metadata=metadata)
    except InvalidInput as exc:
        return await _partition_page(request, session, key, form=_form_values(form),
                                     error=f"Not added: {exc.message}", status=status_of(exc))
    runtime(request).metrics.partition_count(key, result.get("count"))
    done = "added"
    if result.get("existing"):  # a duplicate keeps its own metadata: say so when some was given
        done = "existing_meta" if metadata else "existing"
    return redirect(url("/partition", p=key, done=done, n=result["n"]))


async def search(request: Request) -> Response:
    """The partition page with search results: the real ranking, with scores, no floor."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    values = _form_values(form)
    try:
        limit = form.integer("limit", 1, MAX_SEARCH_LIMIT, 10)
        async with memory_of(request) as memory:
            result = await memory.search(key, form.get("q"), limit)
    except InvalidInput as exc:
        return await _partition_page(request, session, key, form=values,
                                     error=f"Search: {exc.message}", status=status_of(exc))
    return await _partition_page(request, session, key, form=values,
                                 search={"query": form.get("q"), **result})


async def recall(request: Request) -> Response:
    """The partition page with a recall preview: exactly the body a host would receive."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    values = _form_values(form)
    try:
        budget = form.integer("max_bytes", 1, MAX_RECALL_BYTES)
        text = form.get("text")
        async with memory_of(request) as memory:
            result = await memory.recall(key, text if text.strip() else None, budget)
    except InvalidInput as exc:
        return await _partition_page(request, session, key, form=values,
                                     error=f"Recall preview: {exc.message}",
                                     status=status_of(exc))
    fitted = fit_recall(result)  # the provider's own 64 KiB cut and serialisation
    body = dumps(fitted.wire())
    preview = {
        "input": text, "max_bytes": budget, "text": fitted.text, "sources": fitted.sources,
        "cursor": fitted.cursor, "bytes": data.utf8_len(fitted.text),
        "body": body.decode("utf-8"), "body_bytes": len(body),
        "scores": data.recall_scores(result.scored),
    }
    return await _partition_page(request, session, key, form=values, preview=preview)


Changes = tuple[str | None, dict[str, str | None], dict[str, Scalar] | None]


def _changes(item: Item, form: Form) -> Changes:
    """The new text, the record fields and the metadata that differ from ``item``'s: ``None``
    text or metadata is unchanged, a ``None`` field and ``{}`` metadata are cleared. A form
    without the metadata field (a page from before it existed) leaves the metadata as it is.

    Raises:
        InvalidArguments: the metadata box holds a line without ``=`` or breaks its rules.
    """
    text = form.get("text").strip()
    new_text = text if text != item.text.replace("\r\n", "\n") else None
    attrs: dict[str, str | None] = {}
    for name in EDITABLE:
        value = form.get(name).strip()
        if value != str(item.attrs.get(name) or ""):
            attrs[name] = value or None
    metadata = None
    if "metadata" in form.fields:
        wanted = data.metadata_of(form.get("metadata")) or {}
        if canonical(wanted) != canonical(item.metadata):
            metadata = wanted
    return new_text, attrs, metadata


def _kept(form: Form, item: Item) -> dict[str, str]:
    """The edit form's fields as the owner sent them, to show again."""
    return {"text": form.get("text"), **{f: form.get(f) for f in EDITABLE},
            "metadata": form.get("metadata") if "metadata" in form.fields
            else data.metadata_text(item.metadata)}


async def edit(request: Request) -> Response:
    """Save an item's text, note, status, surfacing, expiry and metadata, unless it changed
    since the form."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    n = form.integer("n", 1, 2**62)
    cursor = form.get("cursor") or None
    async with memory_of(request) as memory:
        current, fresh = await data.item_view(memory, key, n)
        if current is None:
            raise NotFound(f"item {n} is not in this partition (never added, or forgotten)")
        try:
            new_text, attrs, metadata = _changes(current, form)
            if new_text is None and not attrs and metadata is None:
                return redirect(url("/partition", p=key, done="unchanged", n=n))
            await memory.update(key, n, new_text, cursor=cursor, attrs=attrs, metadata=metadata)
        except (Conflict, InvalidInput) as exc:
            conflict = isinstance(exc, Conflict)
            error = exc.message
            if conflict:
                current, fresh = await data.item_view(memory, key, n)
                error = (f"Item #{n} was changed by someone else after you opened it. Its "
                         "current version is shown; your edits are kept in the form: save "
                         "again to replace it.")
            if current is None:
                raise
            # refused input keeps the form's cursor: a change made since the form was opened
            # must still conflict when the corrected form is saved
            return page(request, "item.html", status_of(exc), title=f"Item #{n}",
                        session=session, partition=key, item=current,
                        cursor=fresh if conflict or cursor is None else cursor,
                        values=_kept(form, current), error=error,
                        current=current if conflict else None)
    return redirect(url("/partition", p=key, done="edited", n=n))


def _back(form: Form) -> str:
    """The page a form came from: the similar facts view, or the partition page."""
    return "/similar" if form.get("back") == "similar" else "/partition"


async def forget(request: Request) -> Response:
    """Forget an item (unless it changed since the page showing it was rendered)."""
    _, form = await require_post(request)
    key = await partition_field(request, form)
    n = form.integer("n", 1, 2**62)
    async with memory_of(request) as memory:
        result = await memory.forget(key, n, cursor=form.get("cursor") or None)
    runtime(request).metrics.partition_count(key, result.get("count"))
    return redirect(url(_back(form), p=key, done="forgot", n=n))


async def merge(request: Request) -> Response:
    """Merge item ``n`` into item ``into``: ``n`` stays on file, no longer recalled."""
    _, form = await require_post(request)
    key = await partition_field(request, form)
    n, into = form.integer("n", 1, 2**62), form.integer("into", 1, 2**62)
    async with memory_of(request) as memory:
        await memory.merge(key, n, into)
    return redirect(url(_back(form), p=key, done="merged", n=n))


async def delete(request: Request) -> Response:
    """Delete the partition once the owner typed its name (or short id) exactly."""
    session, form = await require_post(request)
    key = await partition_field(request, form)
    phrase = data.confirm_phrase(key)
    async with memory_of(request) as memory:
        if form.fields.get("confirm", "") != phrase:
            count = (await memory.stats(key))["count"]
            return page(request, "delete.html", 400, title=f"Delete {key}", session=session,
                        partition=key, count=count, phrase=phrase,
                        error="The confirmation does not match; nothing was deleted.")
        await memory.delete_partition(key)
    runtime(request).metrics.forget_partition(key)
    return redirect(url("/", done="deleted"))

