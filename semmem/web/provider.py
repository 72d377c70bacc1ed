"""The provider endpoint: ``POST <path>`` with the v1 ``recall`` and ``tool`` operations.

Checks run in the contract's order of trust: credentials (401), readiness (503), media type
(400), the body within its size and time limits (413/408, read before a concurrency slot is
taken), capacity (429), envelope (400), deadline (400), tool (400), access (403), arguments
(422); only then does the core run.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from semmem import tracing
from semmem.contract import DEADLINE_HORIZON_MS, MAX_RESPONSE
from semmem.errors import DeadlineExceeded, InvalidInput, SemmemError
from semmem.items import now_ms
from semmem.items.filters import Filter
from semmem.memory import Memory
from semmem.protocol.envelope import RecallRequest, ToolRequest, operation_id_of, parse_envelope
from semmem.protocol.fitting import fit_recall
from semmem.protocol.jsonio import dumps
from semmem.serving.admission import parse_body
from semmem.serving.dispatch import ToolCall, records
from semmem.serving.guard import served
from semmem.serving.runtime import Runtime
from semmem.web.bodies import read_body
from semmem.web.errors import MEDIA_TYPE, failed_response
from semmem.web.requests import runtime, traced


def _check_media_type(request: Request) -> None:
    """``application/json`` with any parameters; a charset, if given, must be UTF-8."""
    media, *params = request.headers.get("content-type", "").split(";")
    if media.strip().lower() != "application/json":
        raise InvalidInput("the Content-Type header must be application/json")
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" \
                and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise InvalidInput("the Content-Type header names a charset other than UTF-8; "
                               "the body must be UTF-8 JSON")


def _as_is(value: Any) -> Any:
    return value


async def _tool(rt: Runtime, memory: Memory, req: ToolRequest,
                scope: Filter | None) -> tuple[bytes, int]:
    result = await rt.tools.call(memory, ToolCall(
        req.tool, req.arguments, req.partition, req.writable, operation_id=req.operation_id,
        cursor=req.cursor, deadline_ms=req.deadline_ms, scope=scope))
    # sort_keys: a replay decodes the stored result, so bytes must not depend on dict order.
    body = dumps({"result": result}, sort_keys=True)
    if len(body) > MAX_RESPONSE:
        raise SemmemError("tool result over the response limit")
    return body, records(result)


async def handle(request: Request) -> Response:
    """Serve one provider call; every outcome is a JSON body, never a stack trace."""
    return await traced(request, runtime(request).settings.path, _handle)


async def _handle(rt: Runtime, request: Request, span: tracing.Span) -> Response:
    operation_id = "-"
    received = bytearray()
    # The token's scope (its configuration, never the body) bounds what the call reaches;
    # taken with the token at admission, before the body: a tokens file changed while the
    # body arrives changes nothing for this call.
    scope: list[Filter | None] = []

    def admit() -> None:
        scope.append(rt.admit(request.headers.get("authorization")))

    async def receive() -> None:
        _check_media_type(request)
        received[:] = await read_body(request, timeout=rt.settings.body_timeout_s)

    try:
        async with served(rt, "invalid",
                          admit, receive=receive) as call:
            # within 64 KiB: parsed on the loop (``serving.admission``)
            decoded = await parse_body(bytes(received), _as_is)
            operation_id = operation_id_of(decoded)
            req = parse_envelope(decoded)
            call.operation = req.operation
            call.tool = req.tool if isinstance(req, ToolRequest) else ""
            tracing.operation(span, call.tool or "recall", req.partition,
                              req.arguments if isinstance(req, ToolRequest) else None)
            now = now_ms()
            if now >= req.deadline_ms:
                raise DeadlineExceeded("deadlineAt has already passed",
                                       {"deadlineAt": decoded.get("deadlineAt")})
            if req.deadline_ms > now + DEADLINE_HORIZON_MS:
                raise InvalidInput(
                    f"deadlineAt is more than {DEADLINE_HORIZON_MS // 3_600_000} hours ahead",
                    {"deadlineAt": decoded.get("deadlineAt"),
                     "horizonSeconds": DEADLINE_HORIZON_MS // 1000})
            if isinstance(req, RecallRequest):
                recall = await call.memory.recall(req.partition, req.input.text, req.max_bytes,
                                                  filter=scope[0])
                wire = fit_recall(recall).wire()
                body, count = dumps(wire), len(wire["sources"])
            else:
                body, count = await _tool(rt, call.memory, req, scope[0])
        tracing.answered(span, count, len(body))
        return Response(body, 200, media_type=MEDIA_TYPE)
    except Exception as exc:
        return failed_response(exc, span, operation_id)
