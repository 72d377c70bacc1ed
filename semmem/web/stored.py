"""``POST /store``: a batch of store operations on the application's store items
(``semmem.stored``), for trusted application code (no model tool reaches them).

The same tokens and order of trust as ``POST /ingest``: credentials (401), readiness (503),
media type (400), the body within ``MAX_STORE_BODY`` (413) and its time limit (408), capacity
(429), the request (400/422), access (403); then the core. A provider token reaches every
namespace; a token bound to a partition reaches only the namespace of that partition, and
writes only with ``access=read-write`` (a read-only token's ``refreshTtl`` refreshes nothing:
the get or search answers the items as they are); a scoped token is refused (store items carry no
metadata for a scope to hold).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from semmem import tracing
from semmem.errors import Forbidden
from semmem.protocol.jsonio import dumps
from semmem.serving.admission import parse_body
from semmem.serving.auth import Binding
from semmem.serving.guard import served
from semmem.serving.runtime import Runtime
from semmem.stored.batch import run
from semmem.stored.items import StoreItems
from semmem.stored.requests import parse_request
from semmem.web.bodies import read_body
from semmem.web.errors import MEDIA_TYPE, failed_response
from semmem.web.provider import _check_media_type
from semmem.web.requests import traced

STORE_PATH = "/store"
MAX_STORE_BODY = 8 * 1024 * 1024  # a batch of puts, each value up to 256 KiB


def _admit(rt: Runtime, header: str | None) -> Binding | None:
    """The caller's binding (``None``: a provider token, or insecure), from one reading of the
    tokens at admission (before the body), its rate limit spent.

    Raises:
        Unauthorized: missing or wrong token. Forbidden: a scoped token.
        RateLimited: over ``SEMMEM_RATE_LIMIT``.
    """
    identity = rt.auth.tokens.identify(header)
    if identity is None or identity.binding is None:
        scope = rt.admit(header)
        if scope is not None and not scope.empty:
            raise Forbidden("a scoped token cannot use the store (store items carry no "
                            "metadata for its scope)")
        return None
    rt.limit(header, "provider")
    if not identity.scope.empty:
        raise Forbidden("a scoped token cannot use the store")
    return identity.binding


async def handle(request: Request) -> Response:
    """Serve one store batch; every outcome is a JSON body, never a stack trace."""
    return await traced(request, STORE_PATH, _handle)


async def _handle(rt: Runtime, request: Request, span: tracing.Span) -> Response:
    received = bytearray()
    header = request.headers.get("authorization")
    admitted: list[Binding | None] = []

    def check() -> None:
        admitted.append(_admit(rt, header))

    async def receive() -> None:
        _check_media_type(request)
        received[:] = await read_body(request, MAX_STORE_BODY,
                                      timeout=rt.settings.body_timeout_s)

    try:
        async with served(rt, "store", check, receive=receive) as call:
            # up to 8 MiB: parsed and checked in a worker thread (``serving.admission``)
            ops = await parse_body(bytes(received), parse_request)
            binding = admitted[0]
            if binding is not None and not binding.writable:
                if any(op.writes for op in ops):
                    raise Forbidden("this token is read-only (access=read): it cannot put or "
                                    "delete store items")
                ops = [op.read_only() for op in ops]  # its reads refresh no expiry
            results = await run(StoreItems(call.memory), ops,
                                only=None if binding is None else binding.partition)
            body = dumps({"results": results}, sort_keys=True)
        return Response(body, 200, media_type=MEDIA_TYPE)
    except Exception as exc:
        return failed_response(exc, span)
