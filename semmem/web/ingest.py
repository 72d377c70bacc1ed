"""``POST /ingest``: a session's messages stored as pieces (``semmem.conversations``), for
trusted application code (no model tool reaches it).

The provider path's order of trust: credentials (401; a bound token that is read-only 403),
readiness (503), media type (400), the body within ``MAX_INGEST_BODY`` (413, refused before it
is read in full) and its time limit (408), capacity (429), the request (400/422), deadline
(400), access (403); then the core. A body above ``offload.INLINE_BYTES`` is decoded, checked
and fingerprinted off the event loop, and the core answers a replay before it cuts anything.
The same tokens as the provider path: a scoped token ingests into its scope; a token bound to
a partition (an MCP binding) ingests into that one only, and only with ``access=read-write``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from semmem import tracing
from semmem.contract import DEADLINE_HORIZON_MS
from semmem.conversations.ingest import Conversations
from semmem.conversations.messages import IngestRequest, parse_request
from semmem.errors import DeadlineExceeded, Forbidden, InvalidInput
from semmem.items import now_ms
from semmem.items.filters import Filter
from semmem.offload import off_loop
from semmem.protocol.envelope import operation_id_of
from semmem.protocol.jsonio import dumps, loads
from semmem.rules import Operation
from semmem.serving.auth import Binding
from semmem.serving.guard import served
from semmem.serving.runtime import Runtime
from semmem.web.bodies import read_body
from semmem.web.errors import MEDIA_TYPE, failed_response
from semmem.web.provider import _check_media_type
from semmem.web.requests import traced

INGEST_PATH = "/ingest"
MAX_INGEST_BODY = 4 * 1024 * 1024  # a long session in one call (the provider path's is 64 KiB)


def _admit(rt: Runtime, header: str | None) -> tuple[Binding | None, Filter | None]:
    """The caller's binding (``None``: a provider token, or insecure) and scope, from one
    reading of the tokens at admission (before the body), its rate limit spent.

    Raises:
        Unauthorized: missing or wrong token. Forbidden: a read-only bound token.
        RateLimited: over ``SEMMEM_RATE_LIMIT``.
    """
    identity = rt.auth.tokens.identify(header)
    if identity is None or identity.binding is None:
        return None, rt.admit(header)
    if not identity.binding.writable:
        raise Forbidden("this token is read-only (access=read): it cannot ingest")
    rt.limit(header, "provider")
    return identity.binding, None if identity.scope.empty else identity.scope


async def handle(request: Request) -> Response:
    """Serve one ingestion call; every outcome is a JSON body, never a stack trace."""
    return await traced(request, INGEST_PATH, _handle)


async def _handle(rt: Runtime, request: Request, span: tracing.Span) -> Response:
    operation_id = "-"
    received = bytearray()
    header = request.headers.get("authorization")
    # binding and scope taken with the token at admission: a tokens file changed while the
    # body arrives changes nothing for this call
    admitted: list[tuple[Binding | None, Filter | None]] = []

    def check() -> None:
        admitted.append(_admit(rt, header))

    async def receive() -> None:
        _check_media_type(request)
        received[:] = await read_body(request, MAX_INGEST_BODY,
                                      timeout=rt.settings.body_timeout_s)

    try:
        async with served(rt, "ingest", check, receive=receive) as call:
            binding, scope = admitted[0]
            # a scope (its configuration, never the body) bounds what the call writes, and
            # its operation ids are its own (``Operation.within``)
            within = "" if scope is None or scope.empty else scope.digest()
            # parsing, checking and fingerprinting a large body: off the event loop
            decoded, parsed = await off_loop(len(received), _parsed, bytes(received), within)
            operation_id = operation_id_of(decoded)
            if isinstance(parsed, Exception):
                raise parsed  # the request's refusal
            req, op = parsed
            tracing.operation(span, "ingest", req.partition, None)
            now = now_ms()
            if req.deadline_ms is not None:
                if now >= req.deadline_ms:
                    raise DeadlineExceeded("deadlineAt has already passed",
                                           {"deadlineAt": decoded.get("deadlineAt")})
                if req.deadline_ms > now + DEADLINE_HORIZON_MS:
                    raise InvalidInput(
                        f"deadlineAt is more than {DEADLINE_HORIZON_MS // 3_600_000} hours "
                        "ahead", {"deadlineAt": decoded.get("deadlineAt"),
                                  "horizonSeconds": DEADLINE_HORIZON_MS // 1000})
            if req.read_only:
                raise Forbidden("ingesting writes: access 'read' cannot ingest")
            if binding is not None and binding.partition != req.partition:
                raise Forbidden("this token is bound to another partition")
            result = await Conversations(call.memory).ingest(
                req.partition, req.session, req.messages, op=op, scope=scope)
            if rt.accepted:
                result = {**result, "status": "accepted"}
            rt.metrics.partition_count(req.partition, result.get("count"))
            body = dumps(result, sort_keys=True)
        tracing.answered(span, sum(len(n) for n in result["items"]), len(body))
        return Response(body, 200, media_type=MEDIA_TYPE)
    except Exception as exc:
        return failed_response(exc, span, operation_id)


def _parsed(body: bytes, within: str
            ) -> tuple[Any, tuple[IngestRequest, Operation] | Exception]:
    """A body decoded, checked and fingerprinted in one step (run off the loop when large):
    the decoded body, and the request with its operation or the request's refusal (the
    operation id stays readable for the error's log line)."""
    decoded = loads(body)
    try:
        req = parse_request(decoded)
    except Exception as exc:
        return decoded, exc
    return decoded, (req, Operation.of(req.operation_id, "ingest", req.arguments, None,
                                       req.deadline_ms, within))
