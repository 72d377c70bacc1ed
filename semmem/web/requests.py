"""What a route reads off its request: the app's runtime."""

from __future__ import annotations

from starlette.requests import Request

from semmem.serving.runtime import Runtime


def runtime(request: Request) -> Runtime:
    """The app's runtime."""
    rt: Runtime = request.app.state.runtime
    return rt
