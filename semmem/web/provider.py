"""The provider endpoint: ``POST <path>`` with the v1 ``recall`` and ``tool`` operations.

Checks run in the contract's order of trust: credentials (401), readiness (503), capacity
(429), media type and size (400/413), envelope (400), deadline (400), tool (400), access (403),
arguments (422); only then does the core run.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from semmem.contract import DEFAULT_SEARCH_LIMIT, MAX_RESPONSE
from semmem.errors import DeadlineExceeded, Forbidden, InvalidInput, SemmemError
from semmem.items import now_ms
from semmem.memory import Memory, Operation
from semmem.web.bodies import fit_recall, fit_search, read_body
from semmem.web.envelope import RecallRequest, ToolRequest, operation_id_of, parse_envelope
from semmem.web.errors import MEDIA_TYPE, error_response, internal_response
from semmem.web.guard import runtime, served
from semmem.web.jsonio import dumps, loads
from semmem.web.state import Runtime
from semmem.web.tools import BY_NAME

log = logging.getLogger("semmem.web")

Call = Callable[[Memory, ToolRequest, dict[str, Any]], Awaitable[dict[str, Any]]]


def _op(req: ToolRequest, args: dict[str, Any]) -> Operation:
    return Operation.of(req.operation_id, req.tool, args, req.cursor, req.deadline_ms)


async def _search(memory: Memory, req: ToolRequest, args: dict[str, Any]) -> dict[str, Any]:
    limit = args.get("limit", DEFAULT_SEARCH_LIMIT)
    return await memory.search(req.partition, args["query"], limit)


async def _remember(memory: Memory, req: ToolRequest, args: dict[str, Any]) -> dict[str, Any]:
    return await memory.remember(req.partition, args["text"], op=_op(req, args))


async def _update(memory: Memory, req: ToolRequest, args: dict[str, Any]) -> dict[str, Any]:
    return await memory.update(req.partition, args["n"], args["text"], cursor=req.cursor,
                               op=_op(req, args))


async def _forget(memory: Memory, req: ToolRequest, args: dict[str, Any]) -> dict[str, Any]:
    return await memory.forget(req.partition, args["n"], cursor=req.cursor, op=_op(req, args))


CALLS: dict[str, Call] = {
    "search": _search, "remember": _remember, "update": _update, "forget": _forget,
}


def _check_media_type(request: Request) -> None:
    media, _, params = request.headers.get("content-type", "").partition(";")
    if media.strip().lower() != "application/json":
        raise InvalidInput("Content-Type must be application/json")
    charset = params.strip().lower()
    if charset and charset.replace(" ", "") not in ("charset=utf-8", 'charset="utf-8"'):
        raise InvalidInput("the body must be UTF-8 JSON")


async def _recall(rt: Runtime, memory: Memory, req: RecallRequest) -> bytes:
    recall = await memory.recall(req.partition, req.input.text, req.max_bytes)
    return fit_recall(recall.wire())


async def _tool(rt: Runtime, memory: Memory, req: ToolRequest) -> bytes:
    spec = BY_NAME.get(req.tool)
    if spec is None:
        # The name is not echoed: error messages are logged, and it is the caller's string.
        raise InvalidInput("unknown tool; the tools are " + ", ".join(sorted(BY_NAME)),
                           {"tools": sorted(BY_NAME)})
    if spec.access == "write" and not req.writable:
        raise Forbidden(f"the {spec.name} tool writes; this memory is bound read-only")
    args = spec.validate(req.arguments)
    result = await CALLS[spec.name](memory, req, args)
    rt.metrics.partition_count(req.partition, result.get("count"))
    if spec.name == "search":
        return fit_search(result)
    rt.metrics.writes.labels(spec.name).inc()
    # sort_keys: a replay decodes the stored result, so bytes must not depend on dict order.
    body = dumps({"result": result}, sort_keys=True)
    if len(body) > MAX_RESPONSE:
        raise SemmemError("tool result over the response limit")
    return body


async def handle(request: Request) -> Response:
    """Serve one provider call; every outcome is a JSON body, never a stack trace."""
    rt = runtime(request)
    operation_id = "-"
    try:
        async with served(rt, "invalid",
                          lambda: rt.auth.check(request.headers.get("authorization"))) as call:
            _check_media_type(request)
            decoded = loads(await read_body(request))
            operation_id = operation_id_of(decoded)
            req = parse_envelope(decoded)
            call.operation = req.operation
            call.tool = req.tool if isinstance(req, ToolRequest) else ""
            if now_ms() >= req.deadline_ms:
                raise DeadlineExceeded("deadlineAt has already passed",
                                       {"deadlineAt": decoded.get("deadlineAt")})
            if isinstance(req, RecallRequest):
                body = await _recall(rt, call.memory, req)
            else:
                body = await _tool(rt, call.memory, req)
        return Response(body, 200, media_type=MEDIA_TYPE)
    except SemmemError as exc:
        return error_response(exc, operation_id)
    except Exception:
        log.exception("operation %s: internal error", operation_id)
        return internal_response(operation_id)
