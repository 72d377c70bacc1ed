"""The owners' admin API (admin tokens only): list partitions, read/list (filtered)/export/edit
items, forget the items a filter covers, delete, start and list backups, retention policies.

Partitions travel as a query parameter, never as a path segment, so any partition string
(slashes, quotes, unicode) names exactly itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from operator import methodcaller
from typing import TYPE_CHECKING, Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response, StreamingResponse

from semmem.errors import InvalidArguments, InvalidInput, NotFound, SemmemError
from semmem.items import RECORD_FIELDS
from semmem.items.filters import Filter
from semmem.lifecycle import policies
from semmem.memory import Memory
from semmem.protocol.jsonio import dumps, jsonl_chunks, loads
from semmem.serving.guard import nameable, served
from semmem.serving.runtime import Runtime
from semmem.web.bodies import read_body
from semmem.web.errors import MEDIA_TYPE, error_response
from semmem.web.requests import runtime

if TYPE_CHECKING:
    from semmem.store.copies.objects import Objects

MAX_PAGE = 1000


def require_admin(request: Request) -> None:
    """Admin tokens only; checked before any parameter is looked at. A repeated parameter
    is refused: the framework would take its last value and drop the others unseen."""
    runtime(request).auth.check_admin(request.headers.get("authorization"))
    if len(request.query_params.multi_items()) != len(request.query_params):
        raise InvalidInput("a query parameter is given more than once")


async def _partition(request: Request, partition: Annotated[str, Query(
        min_length=1, description="the partition key, exactly")]) -> str:
    return await nameable(runtime(request), partition)


async def _maybe_partition(request: Request, partition: Annotated[str, Query(
        description="the partition key; absent: all of them")] = "") -> str:
    return await nameable(runtime(request), partition) if partition else ""


RuntimeDep = Annotated[Runtime, Depends(runtime)]
# Keys past the contract's bound are refused (400) unless they name a partition that exists.
PartitionQ = Annotated[str, Depends(_partition)]
OffsetQ = Annotated[int, Query(ge=0)]
# Which store an item number is of: the model's (facts, conversation pieces) or the
# application's (its store items' pieces, numbered by their own sequence: store/apart.py).
StoreQ = Annotated[Literal["model", "application"], Query()]
LimitQ = Annotated[int, Query(ge=1, le=MAX_PAGE)]

router = APIRouter(prefix="/admin", dependencies=[Depends(require_admin)])


async def _guarded(request: Request, rt: Runtime,
                   work: Callable[[Memory], Awaitable[Response]],
                   receive: Callable[[], Awaitable[None]] | None = None) -> Response:
    """Readiness and the concurrency limit around one admin call (auth ran before); a body
    is received (``receive``) before the slot is taken."""
    try:
        async with served(rt, "admin", receive=receive) as call:
            return await work(call.memory)
    except SemmemError as exc:
        return error_response(exc, "admin")


def _json(value: object) -> Response:
    return Response(dumps(value), 200, media_type=MEDIA_TYPE)


@router.get("/partitions")
async def list_partitions(request: Request, rt: RuntimeDep, offset: OffsetQ = 0,
                          limit: LimitQ = 100) -> Response:
    """Partition names, sorted, one page at a time."""

    async def work(memory: Memory) -> Response:
        names = await memory.owned_partitions()
        page = names[offset:offset + limit]
        nxt = offset + limit if offset + limit < len(names) else None
        return _json({"partitions": page, "total": len(names), "next": nxt})

    return await _guarded(request, rt, work)


# No declared length: the request head's 16 KiB bounds it, and the metadata rules the rest.
FilterQ = Annotated[str | None, Query(
    description='a filter as JSON: {"metadata": {…}, "updated": {"gte": …}, '
    '"ts": {…}} (docs/records.md)')]


def _filter(raw: str | None) -> Filter | None:
    """The ``filter`` query parameter (JSON) as a ``Filter``; a bad one is a bad parameter
    (400 ``invalid_request``, as every admin parameter)."""
    if raw is None:
        return None
    try:
        return Filter.parse(loads(raw.encode("utf-8")))
    except SemmemError as exc:
        raise InvalidInput(f"filter: {exc.message}", exc.details) from exc


@router.get("/items")
async def list_items(request: Request, rt: RuntimeDep, partition: PartitionQ,
                     offset: OffsetQ = 0, limit: LimitQ = 100,
                     filter: FilterQ = None) -> Response:
    """A partition's live items in number order (those ``filter`` covers), a page at a time."""

    async def work(memory: Memory) -> Response:
        flt = _filter(filter)
        if flt is None or flt.empty:
            count = (await memory.stats(partition))["count"]
            items = await memory.list(partition, offset=offset, limit=limit)
        else:
            matching = await memory.list(partition, filter=flt)
            count, items = len(matching), matching[offset:offset + limit]
        nxt = offset + limit if offset + limit < count else None
        return _json({"items": [it.public() for it in items], "count": count, "next": nxt})

    return await _guarded(request, rt, work)


@router.delete("/items")
async def delete_items(request: Request, rt: RuntimeDep, partition: PartitionQ,
                       filter: Annotated[str, Query(description="a filter as JSON")]
                       ) -> Response:
    """Forget every live item ``filter`` (JSON, required and not empty) covers, through the
    forget path: their numbers are never reused, their texts leave every file within the
    forget window."""

    async def work(memory: Memory) -> Response:
        flt = _filter(filter)
        if flt is None or flt.empty:
            raise InvalidInput("filter must select something; to delete every item, delete "
                               "the partition")
        gone = await memory.forget_matching(partition, flt)
        return _json({"status": "stored", "forgotten": gone, "count": len(gone)})

    return await _guarded(request, rt, work)


@router.get("/item")
async def get_item(request: Request, rt: RuntimeDep, partition: PartitionQ,
                   n: Annotated[int, Query(ge=1)], store: StoreQ = "model") -> Response:
    """One live item by number (``not_found`` when forgotten, expired or never assigned) of
    the model's store, or with ``store=application`` of the application's."""

    async def work(memory: Memory) -> Response:
        if store == "application":
            memory = await memory.application()
        item = await memory.get(partition, n)
        if item is None:
            raise NotFound(f"no live item {n} in this partition", {"n": n})
        return _json({"item": item.public()})

    return await _guarded(request, rt, work)


EDITABLE = ("text", *(f for f in RECORD_FIELDS if f != "slug"))


@router.patch("/items")
async def edit_item(request: Request, rt: RuntimeDep, partition: PartitionQ,
                    n: Annotated[int, Query(ge=1)], store: StoreQ = "model") -> Response:
    """Change item ``n``'s text and/or record fields (note, status, surfacing, mergedInto,
    expiresAt); with ``store=application``, a piece of the application's store items.

    The body is a JSON object with any of those keys; ``null`` clears a record field.
    """

    received: list[object] = []

    async def receive() -> None:
        # The provider's reader: bounded size and time, strict JSON, bounded nesting.
        received.append(loads(await read_body(request, timeout=rt.settings.body_timeout_s)))

    async def work(memory: Memory) -> Response:
        body = received[0]
        if not isinstance(body, dict) or not body:
            raise InvalidArguments(f"body must be a non-empty object with keys from {EDITABLE}")
        unknown = sorted(set(body) - set(EDITABLE))
        if unknown:
            raise InvalidArguments(f"unknown fields {unknown}; editable: {list(EDITABLE)}")
        text = body.get("text")
        attrs = {k: v for k, v in body.items() if k != "text"}
        if store == "application":
            memory = await memory.application()
        result = await memory.update(partition, n, text, attrs=attrs)
        item = await memory.get(partition, n)
        return _json({**result, "item": item.public() if item else None})

    return await _guarded(request, rt, work, receive)


@router.get("/export")
async def export(request: Request, rt: RuntimeDep, partition: PartitionQ) -> Response:
    """Every live item of a partition as JSONL (the `semmem import` format)."""

    async def work(memory: Memory) -> Response:
        items = await memory.exported(partition)  # read here: its errors answered as such
        return StreamingResponse(jsonl_chunks(items, methodcaller("public")),
                                 media_type="application/x-ndjson")

    return await _guarded(request, rt, work)


@router.get("/similar")
async def similar(request: Request, rt: RuntimeDep, partition: PartitionQ,
                  threshold: Annotated[float | None, Query(ge=-1, le=1)] = None) -> Response:
    """Groups of facts that probably restate or supersede each other, closest pair first."""

    async def work(memory: Memory) -> Response:
        found = await memory.similar(partition, threshold)
        return _json({"groups": [g.public() for g in found],
                      "threshold": memory.similar_threshold if threshold is None else threshold})

    return await _guarded(request, rt, work)


@router.get("/stats")
async def stats(request: Request, rt: RuntimeDep, partition: PartitionQ) -> Response:
    """Counters of one partition."""

    async def work(memory: Memory) -> Response:
        return _json(await memory.stats(partition))

    return await _guarded(request, rt, work)


@router.delete("/partitions")
async def delete_partition(request: Request, rt: RuntimeDep, partition: PartitionQ) -> Response:
    """Delete a partition and every file of it."""

    async def work(memory: Memory) -> Response:
        existed = await memory.delete_partition(partition)
        rt.metrics.forget_partition(partition)
        return _json({"deleted": existed, "partition": partition})

    return await _guarded(request, rt, work)


def _backup_target(rt: Runtime) -> Objects:
    from semmem.store.copies.objects import Objects

    if not rt.settings.backup_to:
        raise InvalidInput("no backup target is configured (set SEMMEM_BACKUP_TO)")
    return Objects(rt.settings.backup_to, rt.settings.storage_options)


@router.post("/backups", status_code=202)
async def start_backup(request: Request, rt: RuntimeDep) -> Response:
    """Start a backup of the store into ``SEMMEM_BACKUP_TO`` (online: writes go on); answers
    at once with the job, whose outcome ``GET /admin/backups`` shows."""

    async def work(memory: Memory) -> Response:
        job = request.app.state.backups.start(memory, _backup_target(rt),
                                              rt.settings.retention_ms)
        return Response(dumps(job), 202, media_type=MEDIA_TYPE)

    return await _guarded(request, rt, work)


@router.get("/backups")
async def backups(request: Request, rt: RuntimeDep) -> Response:
    """The backups at ``SEMMEM_BACKUP_TO`` (complete ones only) and the jobs this server ran."""

    async def work(memory: Memory) -> Response:
        jobs = request.app.state.backups.listing()
        if not rt.settings.backup_to:
            return _json({"to": None, "backups": [], "jobs": jobs})
        from semmem.lifecycle.backup import list_backups

        found = await asyncio.to_thread(list_backups, _backup_target(rt))
        return _json({"to": rt.settings.backup_to, "backups": [m.summary() for m in found],
                      "jobs": jobs})

    return await _guarded(request, rt, work)


DURATION = r"[1-9][0-9]{0,8}[smhd]"
PolicyQ = Annotated[str, Query(pattern=f"^(never|{DURATION})$",
                               description="a duration (45s, 30m, 12h, 90d) or never")]
SetPolicyQ = Annotated[str, Query(pattern=f"^(never|inherit|{DURATION})$",
                                  description="a duration, never, or inherit (the default)")]
# Absent (or empty) means every partition: a string, not a nullable one, so the schema says
# exactly what is served (a repeated parameter is not a list).
MaybePartitionQ = Annotated[str, Depends(_maybe_partition)]


@router.get("/retention")
async def retention(request: Request, rt: RuntimeDep,
                    partition: MaybePartitionQ) -> Response:
    """A partition's policy and the facts due to expire, soonest first; without a partition,
    the deployment default and every partition's override."""

    async def work(memory: Memory) -> Response:
        if not partition:
            return _json(await policies.show(memory))
        return _json(await policies.due(memory, partition))

    return await _guarded(request, rt, work)


@router.get("/retention/preview")
async def retention_preview(request: Request, rt: RuntimeDep, policy: PolicyQ,
                            partition: MaybePartitionQ) -> Response:
    """How many live facts ``policy`` would expire now (one partition, or every partition
    that inherits the default). Changes nothing."""

    async def work(memory: Memory) -> Response:
        return _json(await policies.preview(memory, policy, partition or None))

    return await _guarded(request, rt, work)


@router.put("/retention")
async def set_retention(request: Request, rt: RuntimeDep, partition: PartitionQ,
                        policy: SetPolicyQ) -> Response:
    """Set a partition's policy; the facts it expires now are forgotten at once."""

    async def work(memory: Memory) -> Response:
        return _json(await policies.set_policy(memory, partition, policy))

    return await _guarded(request, rt, work)
