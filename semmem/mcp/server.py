"""The MCP server (the SDK's low-level ``Server``) over a ``Service``, and ``semmem mcp``.

The low-level server rather than the decorator one: the tool schemas are the contract's own
JSON Schemas, handed over as they are, not re-derived from Python signatures.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from semmem import __version__
from semmem.embedding.embedder import Embedder
from semmem.errors import NotFound, NotReady, SemmemError
from semmem.mcp import resources
from semmem.mcp.service import Caller, Service
from semmem.mcp.tools import mcp_tool
from semmem.protocol.status import PUBLIC_5XX, status_of
from semmem.serving import logs, otel
from semmem.serving.runtime import Runtime
from semmem.settings import Settings
from semmem.store import quiet_engine_logs
from semmem.store.modes import check_data_dir, owner_only
from semmem.store.upkeep.scratch import private_temp

log = logging.getLogger("semmem.mcp")

CallerOf = Callable[[ServerRequestContext[Any]], Caller]
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource
# How long a session's end runs purge passes (one under way finishes): within the grace a
# host gives a server whose stdin closed before it signals (the MCP SDK's client: 2 s).
SESSION_END_S = 1.5

INSTRUCTIONS = (
    "semmem is a long-term memory of numbered facts. Before answering, call recall with the "
    "user's request and use what comes back. When you learn a durable fact worth knowing in "
    "later conversations, remember it (one self-contained sentence). Use search to find a "
    "fact's number, update to correct it and forget to delete it."
)


def default_partition(settings: Settings) -> str:
    """The partition ``semmem mcp`` serves unless told: ``SEMMEM_MCP_PARTITION``, else the user."""
    return settings.mcp_partition or getpass.getuser()


def _protocol_error(exc: SemmemError) -> MCPError:
    """A domain error of a prompt or resource request, as a JSON-RPC error."""
    status = status_of(exc)
    if status >= 500 and not isinstance(exc, NotReady):
        public = PUBLIC_5XX.get(status, PUBLIC_5XX[500]).format(op="-")
        return MCPError(types.INTERNAL_ERROR, public)
    if isinstance(exc, NotFound):
        return MCPError(RESOURCE_NOT_FOUND, exc.message)
    code = types.INTERNAL_ERROR if status >= 500 else types.INVALID_PARAMS
    return MCPError(code, exc.message)


@asynccontextmanager
async def _answered(method: str) -> AsyncIterator[None]:
    """A prompt or resource request's refusals as JSON-RPC errors; an unexpected exception is
    logged and answered in the public 5xx wording (the SDK would send ``str(exc)``)."""
    try:
        yield
    except SemmemError as exc:
        raise _protocol_error(exc) from None
    except MCPError:
        raise
    except Exception:
        log.exception("mcp %s: internal error", method)
        raise MCPError(types.INTERNAL_ERROR, PUBLIC_5XX[500].format(op="-")) from None


def build_server(service: Service, caller_of: CallerOf) -> Server[Any]:
    """The SDK server: tools, the ``memory-context`` prompt and the items as resources."""
    tools = [mcp_tool(spec) for spec in service.specs.values()]

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult:
        headers = ctx.request.headers if ctx.request is not None else None
        return await service.call_tool(caller_of(ctx), params.name, params.arguments,
                                       ctx.request_id, headers)

    async def list_prompts(ctx: ServerRequestContext[Any],
                           params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[service.PROMPT])

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
                         ) -> types.GetPromptResult:
        if params.name != service.PROMPT.name:
            raise MCPError(types.INVALID_PARAMS, f"the only prompt is {service.PROMPT.name!r}")
        caller = caller_of(ctx)
        async with _answered("prompt"), service.guarded("prompt") as memory:
            return await service.prompt(memory, caller, params.arguments)

    async def list_resources(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourcesResult:
        caller = caller_of(ctx)
        async with _answered("resources/list"), service.guarded("resources") as memory:
            return await resources.list_page(memory, caller.partition,
                                             params.cursor if params else None,
                                             scope=caller.scope)

    async def list_templates(ctx: ServerRequestContext[Any],
                             params: types.PaginatedRequestParams | None
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[resources.TEMPLATE])

    async def read_resource(ctx: ServerRequestContext[Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        caller = caller_of(ctx)
        async with _answered("resources/read"), service.guarded("resources") as memory:
            return await resources.read(memory, caller.partition, params.uri, caller.scope)

    return Server(
        "semmem", version=__version__, title="semmem memory", instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=call_tool,
        on_list_prompts=list_prompts, on_get_prompt=get_prompt,
        on_list_resources=list_resources, on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def serve_stdio(settings: Settings, *, partition: str, writable: bool = True,
                      embedder: Embedder | None = None) -> None:
    """Serve MCP on stdin/stdout for one partition until the host closes the pipe or sends
    SIGTERM; either way, purges not done yet are handed to the store and then run for up to
    ``SESSION_END_S`` (``Maintenance``); the next start purges at once what is left."""
    runtime = Runtime(settings, embedder=embedder)
    runtime.start()
    service = Service(runtime, max_bytes=settings.mcp_max_bytes)
    # One process is one session: its request ids identify writes, its recalls give the cursor.
    caller = Caller(partition, writable, session=f"stdio-{uuid.uuid4().hex}")
    server = build_server(service, lambda ctx: caller)
    # A host that stops the session with SIGTERM (after closing the pipe, or instead of it)
    # gets the shutdown of the pipe's end: pending purges handed to the store. Then the process
    # exits at once: the SDK reads stdin on a thread no cancellation reaches.
    loop = asyncio.get_running_loop()
    stopping: list[asyncio.Task[None]] = []

    async def end() -> None:
        # No process may follow a session for a while: after the hand-off, its purges run
        # now for a bounded time, so what is past the retention leaves before it exits.
        maintenance = runtime.maintainer
        if maintenance is not None:
            maintenance.settle_s = SESSION_END_S
            maintenance.settle_first.add(partition)  # the one this session served
        await runtime.stop()

    def stop_once() -> asyncio.Task[None]:
        if not stopping:
            stopping.append(loop.create_task(end(), name="semmem-stop"))
        return stopping[0]

    def exit_now(_: object) -> None:
        logging.shutdown()
        os._exit(0)

    def cannot_serve(exc: SemmemError) -> None:
        # As `semmem serve` (docs/operating.md, "Start-up"): a store of another model, a broken
        # one, no retry helps, so the process ends with the fix in its last line instead of
        # answering every call "not ready". At once: the SDK's stdin thread would hold it up.
        print(f"error: {exc.message}", file=sys.stderr, flush=True)
        logging.shutdown()
        os._exit(1)

    runtime.on_fatal = cannot_serve

    with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals here
        loop.add_signal_handler(signal.SIGTERM, lambda: stop_once().add_done_callback(exit_now))
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await asyncio.shield(stop_once())
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGTERM)


def run_stdio(settings: Settings, *, partition: str | None = None, writable: bool = True,
              embedder: Embedder | None = None) -> None:
    """``semmem mcp``: checks the model, logs to stderr (stdout carries the protocol), serves."""
    quiet_engine_logs()  # before the store loads the engine
    check_data_dir(settings.data)  # as serve: the data folder's line before the model's
    if embedder is None:
        from semmem.embedding.choice import check_model

        # fail now, with one line, rather than at the first call
        check_model(settings.model, settings.encoder)
    logs.configure(settings.log_level, settings.log_format)
    tracer = otel.setup(console=sys.stderr)  # None unless OTEL_* configure tracing
    try:
        with owner_only(settings.data, default_dir=settings.default_data), \
                private_temp(settings.data):  # the engine's spill files: store/upkeep/scratch.py
            asyncio.run(serve_stdio(settings, partition=partition or default_partition(settings),
                                    writable=writable, embedder=embedder))
    finally:
        if tracer is not None:
            tracer.shutdown()
