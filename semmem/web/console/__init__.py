"""The owner console: server-rendered pages under ``/console`` to inspect, search, edit, export
and delete a partition's memory.

Mounted by ``create_app`` only when an admin token is configured. Signing in with an admin
token starts a server-side session whose random id rides in an HttpOnly, SameSite=Strict
cookie (``session.py``); every POST must come
from a console page (Origin) and carry the session's CSRF token (``guard.py``). Every response
says ``Cache-Control: no-store`` and loads nothing from outside ``/console/static``
(``render.py``). The routes call the memory core directly, like the admin API.
"""

from __future__ import annotations

from importlib.resources import files

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from semmem.errors import SemmemError
from semmem.serving.runtime import Runtime
from semmem.web.console import actions, conversations, pages, retention
from semmem.web.console.guard import Refused, SignInRequired
from semmem.web.console.render import PREFIX, ConsoleHeaders, error_page, semmem_error_page, url
from semmem.web.console.session import COOKIE, Sessions, clear_cookie

__all__ = ["PREFIX", "create_console", "landing"]


async def landing(request: Request) -> Response:
    """``GET /console`` without the trailing slash: a person typing the address lands on the
    console's first page (the mount itself answers only below ``/console/``)."""
    return RedirectResponse(url("/"), headers={"Cache-Control": "no-store"})


def create_console(runtime: Runtime) -> Starlette:
    """The console app, to mount at ``PREFIX``; it shares ``runtime`` with the provider."""
    static = str(files("semmem.web.console") / "static")
    routes = [
        Route("/", pages.partitions, methods=["GET"]),
        Route("/signin", pages.signin_form, methods=["GET"]),
        Route("/signin", pages.signin, methods=["POST"]),
        Route("/signout", pages.signout, methods=["POST"]),
        Route("/partition", pages.partition, methods=["GET"]),
        Route("/partition/add", actions.add, methods=["POST"]),
        Route("/partition/search", actions.search, methods=["POST"]),
        Route("/partition/recall", actions.recall, methods=["POST"]),
        Route("/item", pages.item, methods=["GET"]),
        Route("/item", actions.edit, methods=["POST"]),
        Route("/item/forget", actions.forget, methods=["POST"]),
        Route("/item/merge", actions.merge, methods=["POST"]),
        Route("/similar", pages.similar, methods=["GET"]),
        Route("/sessions", conversations.sessions, methods=["GET"]),
        Route("/session", conversations.opened, methods=["GET"]),
        Route("/session/forget", conversations.forget, methods=["POST"]),
        Route("/retention", retention.show, methods=["GET"]),
        Route("/retention", retention.set_policy, methods=["POST"]),
        Route("/retention/preview", retention.preview, methods=["POST"]),
        Route("/export", pages.export, methods=["GET"]),
        Route("/delete", pages.delete_form, methods=["GET"]),
        Route("/delete", actions.delete, methods=["POST"]),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(ConsoleHeaders)],
        exception_handlers={
            SignInRequired: _on_sign_in_required,
            Refused: _on_refused,
            SemmemError: _on_semmem_error,
            HTTPException: _on_http_error,
        },
    )
    app.state.runtime = runtime
    app.state.sessions = Sessions()
    return app


async def _on_sign_in_required(request: Request, exc: Exception) -> Response:
    target = url("/signin")
    if request.method == "GET":
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        target = url("/signin", next=here)
    response = pages.redirect(target)
    if COOKIE in request.cookies:  # expired, malformed, or its token was removed
        clear_cookie(response, request)
    return response


async def _on_refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    response = error_page(request, exc.status, exc.message)
    if exc.end_session and COOKIE in request.cookies:
        clear_cookie(response, request)
    return response


async def _on_semmem_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SemmemError)
    return semmem_error_page(request, exc)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    messages = {404: "There is no such console page.",
                405: f"{request.method} is not allowed here."}
    message = messages.get(exc.status_code, str(exc.detail))
    response = error_page(request, exc.status_code, message)
    if exc.headers:
        response.headers.update(exc.headers)
    return response
