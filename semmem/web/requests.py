"""What a route reads off its request: the app's runtime; a served call inside its span."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from semmem import tracing
from semmem.serving.runtime import Runtime

Handler = Callable[[Runtime, Request, tracing.Span], Awaitable[Response]]


def runtime(request: Request) -> Runtime:
    """The app's runtime."""
    rt: Runtime = request.app.state.runtime
    return rt


async def traced(request: Request, route: str, handler: Handler) -> Response:
    """``handler``'s response to ``request``, inside the request's span (its method, route and
    status recorded)."""
    rt = runtime(request)
    with tracing.span("semmem.request", request.headers, server=True) as span:
        tracing.http(span, request.method, route)
        response = await handler(rt, request, span)
        span.set("http.response.status_code", response.status_code)
        return response
