"""The app factory: ``create_app(settings)`` builds the FastAPI app; its lifespan opens the core."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from semmem import __version__
from semmem.embedding.embedder import Embedder
from semmem.errors import InvalidInput, SemmemError, Unavailable
from semmem.lifecycle.backup_jobs import BackupJobs
from semmem.mcp import MCP_PATH
from semmem.memory import Memory
from semmem.protocol.declaration import check_path
from semmem.protocol.jsonio import dumps
from semmem.protocol.untrusted import loggable
from semmem.serving.runtime import Runtime
from semmem.settings import Settings
from semmem.web import admin, console, ingest, provider, sessions, stored
from semmem.web.errors import MEDIA_TYPE, error_response, http_error_response, internal_response
from semmem.web.rebinding import LoopbackOnly

log = logging.getLogger("semmem.web")
OPS_PATHS = ("/healthz", "/readyz", "/metrics", "/openapi.json", ingest.INGEST_PATH,
             stored.STORE_PATH)


def create_app(settings: Settings, *, embedder: Embedder | None = None,
               memory: Memory | None = None) -> FastAPI:
    """The HTTP app for ``settings``; the model and store open in the lifespan, in the background.

    ``embedder`` replaces the configured model; ``memory`` replaces the whole core (its store
    is then left open at shutdown, since the caller owns it).

    Raises:
        InvalidInput: the endpoint path breaks the contract's rules, or a tokens file is unreadable.
    """
    if settings.path.startswith("/admin") or settings.path in OPS_PATHS:
        raise InvalidInput(f"path {settings.path!r} is taken by the admin or ops endpoints")
    check_path(settings.path)
    runtime = Runtime(settings, embedder=embedder, memory=memory)
    # On with admin tokens, or a file for them (re-read when it changes, so it may fill later).
    with_console = bool(runtime.auth.admin) or settings.admin_tokens_file is not None
    if with_console and settings.path.startswith(console.PREFIX):
        raise InvalidInput(f"path {settings.path!r} is taken by the console")
    if settings.mcp and settings.path == MCP_PATH:
        raise InvalidInput(f"path {settings.path!r} is taken by MCP (set SEMMEM_MCP=false)")
    mcp = None
    if settings.mcp:
        from semmem.mcp.http import McpEndpoint  # the MCP SDK loads only when MCP is served

        mcp = McpEndpoint(runtime)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime.start()
        try:
            if mcp is None:
                yield
            else:
                async with mcp.run():
                    yield
        finally:
            await app.state.backups.stop()  # before the store closes under them
            await runtime.stop()

    # No slash redirects: the contract has no redirects, every path not served is a 404.
    app = FastAPI(title="semmem", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False)
    app.state.runtime = runtime
    app.state.backups = BackupJobs()
    app.add_api_route(settings.path, provider.handle, methods=["POST"],
                      include_in_schema=False)
    app.add_api_route(ingest.INGEST_PATH, ingest.handle, methods=["POST"],
                      include_in_schema=False)
    app.add_api_route(stored.STORE_PATH, stored.handle, methods=["POST"],
                      include_in_schema=False)
    if mcp is not None:
        app.router.routes.append(Route(MCP_PATH, mcp, include_in_schema=False))  # an ASGI app
    app.include_router(admin.router)
    app.include_router(sessions.router)
    app.add_api_route("/healthz", healthz, methods=["GET"])
    app.add_api_route("/readyz", readyz, methods=["GET"])
    app.add_api_route("/metrics", metrics, methods=["GET"])
    app.add_api_route("/openapi.json", openapi_document, methods=["GET"], include_in_schema=False)
    if with_console:
        app.add_route(console.PREFIX, console.landing, methods=["GET"], include_in_schema=False)
        app.mount(console.PREFIX, console.create_console(runtime))
    app.add_exception_handler(SemmemError, _on_semmem_error)
    app.add_exception_handler(HTTPException, _on_http_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(Exception, _on_unexpected)
    if settings.insecure:
        app.add_middleware(LoopbackOnly)  # no token to stop a rebound page: see rebinding.py
    return app


async def healthz(request: Request) -> Response:
    """Liveness: the process answers."""
    return Response(dumps({"status": "ok"}), 200, media_type=MEDIA_TYPE)


async def readyz(request: Request) -> Response:
    """Readiness: the model is loaded and the store is reachable."""
    rt: Runtime = request.app.state.runtime
    try:
        memory = rt.require_memory()
        await memory.ping()  # a real round trip to the store
    except SemmemError as exc:
        return error_response(exc, "readyz", quiet=True)  # probes poll; not worth a log line
    except Exception as exc:  # the engine's own errors: the store is not reachable
        return error_response(Unavailable(f"store not reachable: {type(exc).__name__}"), "readyz")

    body = {"status": "ready", "model": memory.embedder.model_id, "ranking": rt.ranking}
    return Response(dumps(body), 200, media_type=MEDIA_TYPE)


async def metrics(request: Request) -> Response:
    """Prometheus text exposition."""
    rt: Runtime = request.app.state.runtime
    return Response(rt.metrics.render(), 200, media_type=rt.metrics.content_type)


async def openapi_document(request: Request) -> Response:
    """The API's OpenAPI 3.1 document (built once, from the tool definitions and this app)."""
    doc: bytes | None = getattr(request.app.state, "openapi_document", None)
    if doc is None:
        from semmem.web.openapi import api_openapi  # built on the first GET only

        rt: Runtime = request.app.state.runtime
        doc = dumps(api_openapi(request.app, rt.settings.path, accepted=rt.accepted))
        request.app.state.openapi_document = doc
    return Response(doc, 200, media_type=MEDIA_TYPE)


async def _on_semmem_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SemmemError)
    return error_response(exc)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    if exc.status_code == 404:
        detail = f"no such endpoint: {request.method} {request.url.path}"
    elif exc.status_code == 405:
        takes = (exc.headers or {}).get("Allow", "")
        detail = f"method {request.method} is not allowed on {request.url.path}" + (
            f"; it takes {takes}" if takes else "")
    return http_error_response(exc.status_code, detail, dict(exc.headers or {}))


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = [
        {"field": ".".join(str(p) for p in err.get("loc", ())), "problem": str(err.get("msg"))}
        for err in exc.errors()
    ]
    first = problems[0] if problems else {"field": "", "problem": "invalid"}
    return error_response(InvalidInput(f"invalid request: {first['field']}: {first['problem']}",
                                       {"problems": problems}))


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    log.error("operation -: internal error on %s %s", loggable(request.method, 20),
              loggable(request.url.path), exc_info=exc)
    return internal_response()
