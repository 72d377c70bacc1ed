"""What the MCP surface does, apart from any transport: tools, the prompt and the resources.

Every call names a ``Caller``: the partition and access the transport established (the stdio
command line, or the bearer token's binding over HTTP) and, when MCP has one, the session.
Tool arguments never choose the partition.

Within a session, semmem keeps what the contract's host keeps for it: the cursor of the last
recall (so ``update``/``forget`` of a fact changed since then is a conflict) and the request
id of each write, as the core's operation id (so a write re-sent with the same request id is
applied once and its first result replayed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from semmem import tracing
from semmem.errors import Conflict, InvalidArguments, InvalidInput, SemmemError
from semmem.items.filters import Filter
from semmem.mcp import MCP_PATH
from semmem.mcp.errors import internal_error, tool_error
from semmem.mcp.tools import specs
from semmem.memory import Memory
from semmem.protocol.fitting import fit_recall
from semmem.protocol.jsonio import check_values, dumps
from semmem.protocol.untrusted import ascii_int
from semmem.serving.dispatch import Dispatcher, ToolCall, records
from semmem.serving.guard import served
from semmem.serving.runtime import Runtime

log = logging.getLogger("semmem.mcp")
EDITS = ("update", "forget")  # the tools a session's cursor checks

CURSORS_PER_TOKEN = 64  # sessions of one token whose last recall's cursor is kept
LOST_PER_TOKEN = 1024  # sessions of one token remembered as having lost their cursor
READY_WAIT_S = 60.0  # a call made while the model loads waits this long, then fails


@dataclass(frozen=True)
class Caller:
    """Who is calling: partition and access from the transport, and the session if any."""

    partition: str
    writable: bool
    session: str | None = None
    principal: str = ""  # whose sessions these are: a digest of the bearer token
    scope: Filter | None = None  # the token's scope: the facts its calls reach


class Sessions:
    """The cursor of each session's last recall, kept per token: at most ``limit`` sessions
    of one token, so one token's sessions never push out another's.

    A session whose cursor was pushed out is remembered (up to ``lost_limit`` of them per
    token) as having lost it: its next edit is a conflict (the model recalls again), never an
    edit applied without the check. With the per-token session cap below ``limit`` only
    sessions that have ended lose their cursor.
    """

    def __init__(self, limit: int = CURSORS_PER_TOKEN, lost_limit: int = LOST_PER_TOKEN) -> None:
        self.limit = limit
        self.lost_limit = lost_limit
        self._cursors: dict[str, OrderedDict[tuple[str, str], str]] = {}
        self._lost: dict[str, OrderedDict[tuple[str, str], None]] = {}

    def cursor(self, caller: Caller) -> str | None:
        """The cursor of the caller's session's last recall, if it has one."""
        if caller.session is None:
            return None
        cursors = self._cursors.get(caller.principal)
        return None if cursors is None else cursors.get((caller.session, caller.partition))

    def lost(self, caller: Caller) -> bool:
        """Whether the caller's session recalled but its cursor has since been pushed out."""
        if caller.session is None:
            return False
        lost = self._lost.get(caller.principal)
        return lost is not None and (caller.session, caller.partition) in lost

    def recalled(self, caller: Caller, cursor: str) -> None:
        """Keep the cursor of a recall in the caller's session."""
        if caller.session is None:
            return
        key = (caller.session, caller.partition)
        cursors = self._cursors.setdefault(caller.principal, OrderedDict())
        lost = self._lost.setdefault(caller.principal, OrderedDict())
        lost.pop(key, None)
        cursors[key] = cursor
        cursors.move_to_end(key)
        while len(cursors) > self.limit:
            lost[cursors.popitem(last=False)[0]] = None
        while len(lost) > self.lost_limit:
            lost.popitem(last=False)


def _request_key(request_id: str | int | None) -> str:
    """A JSON-RPC request id as part of an operation id: 7 and "7" differ; long ids hashed."""
    if request_id is None:
        return "-"
    key = json.dumps(request_id)
    return key if len(key) <= 64 else "#" + hashlib.sha256(key.encode()).hexdigest()[:32]


def _result(value: dict[str, Any], text: str | None = None) -> types.CallToolResult:
    text = dumps(value).decode("utf-8") if text is None else text
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=value)


class Service:
    """The MCP tools, prompt and resources over one runtime's memory core."""

    def __init__(self, runtime: Runtime, *, max_bytes: int) -> None:
        self.runtime = runtime
        self.max_bytes = max_bytes
        self.specs = specs(max_bytes, accepted=runtime.accepted,
                           expiry=runtime.settings.tool_expiry,
                           metadata=runtime.settings.tool_metadata)
        self.tools = Dispatcher(self.specs, runtime.metrics, accepted=runtime.accepted)
        self.sessions = Sessions()

    async def loaded(self) -> None:
        """Wait, at most ``READY_WAIT_S``, while the model and the store load (a host calls
        right after start); a load that failed does not wait."""
        rt = self.runtime
        if rt.memory is None and rt.failure is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(rt.ready.wait(), READY_WAIT_S)

    @asynccontextmanager
    async def guarded(self, label: str) -> AsyncIterator[Memory]:
        """The memory core for one prompt or resource request, through the same guard as a
        tool call (readiness, the concurrency limit, the metrics, under ``label``).

        Raises:
            NotReady, Overloaded: as for a tool call.
        """
        await self.loaded()
        async with served(self.runtime, "mcp") as call:
            call.tool = label
            yield call.memory

    # ----- tools -------------------------------------------------------------------------------
    async def call_tool(self, caller: Caller, name: str, arguments: dict[str, Any] | None,
                        request_id: str | int | None = None,
                        headers: Mapping[str, str] | None = None) -> types.CallToolResult:
        """Run one tool call through the request guard; every outcome is a result, errors as
        ``isError`` results. ``headers``: the HTTP request's (its ``traceparent``), if any."""
        operation_id = f"mcp.{caller.session or '-'}.{_request_key(request_id)}"
        with tracing.span("semmem.request", headers, server=True) as span:
            tracing.operation(span, name, caller.partition, arguments)
            tracing.mcp(span, "tools/call", None if headers is None else MCP_PATH)
            await self.loaded()
            try:
                async with served(self.runtime, "mcp") as call:
                    call.tool = name if name in self.specs else ""
                    result = await self._tool(call.memory, caller, name, arguments or {},
                                              operation_id)
            except SemmemError as exc:
                span.fail(exc.code)
                return tool_error(exc, operation_id)
            except Exception:
                span.fail("internal")
                log.exception("mcp operation %s: internal error", operation_id)
                return internal_error(operation_id)
            value = result.structured_content or {}
            tracing.answered(span, records(value), len(dumps(value)))
            return result

    async def _tool(self, memory: Memory, caller: Caller, name: str, arguments: dict[str, Any],
                    operation_id: str) -> types.CallToolResult:
        # The SDK's JSON reader lets NaN, Infinity and 1e309 through: refused here as the
        # provider's reader refuses them, before anything measures or stores the arguments.
        check_values(arguments, InvalidArguments)
        # Without a session there is no request identity to deduplicate by (stateless HTTP);
        # the cursor is the session's, kept here for the caller, not sent by it.
        if name in EDITS and self.sessions.lost(caller):
            raise Conflict("this session's last recall is no longer remembered, so the edit "
                           "cannot be checked against it; call recall again, then edit")
        call = ToolCall(name, arguments, caller.partition, caller.writable,
                        operation_id=None if caller.session is None else operation_id,
                        cursor=self.sessions.cursor(caller), cursor_sent=False,
                        scope=caller.scope)
        result = await self.tools.call(memory, call)
        if name != "recall":
            return _result(result)
        self.sessions.recalled(caller, result["cursor"])
        # The cursor stays here: the contract keeps it from the model, and so does MCP.
        public = {"text": result["text"], "sources": result["sources"]}
        return _result(public, result["text"] or "(no remembered facts are relevant)")

    # ----- prompt ------------------------------------------------------------------------------
    PROMPT = types.Prompt(
        name="memory-context",
        description=("The remembered facts relevant to a text, as numbered lines, to put in "
                     "front of a conversation (what the recall tool returns)."),
        arguments=[
            types.PromptArgument(name="text", required=True,
                                 description="What the facts should be relevant to."),
            types.PromptArgument(name="max_bytes", required=False,
                                 description="Budget in UTF-8 bytes (default the server's)."),
        ],
    )

    async def prompt(self, memory: Memory, caller: Caller, arguments: dict[str, str] | None
                     ) -> types.GetPromptResult:
        """The ``memory-context`` prompt: the recall for ``text``, as one user message.

        Raises:
            SemmemError: bad arguments (the transport reports it).
        """
        args: dict[str, Any] = dict(arguments or {})
        raw = args.pop("max_bytes", None)
        if raw is not None:
            number = ascii_int(raw) if isinstance(raw, str) else None
            if number is None:
                raise InvalidInput("max_bytes must be a whole number of bytes")
            args["max_bytes"] = number
        args = self.specs["recall"].validate(args)
        recall = fit_recall(await memory.recall(caller.partition, args["text"],
                                                args.get("max_bytes", self.max_bytes),
                                                filter=caller.scope))
        self.sessions.recalled(caller, recall.cursor)
        text = recall.text
        body = ("Facts remembered from earlier conversations, numbered (refer to a fact by its "
                "number to update or forget it):\n" + text) if text else \
            "No remembered facts are relevant."
        return types.GetPromptResult(
            description="Remembered facts relevant to the text",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=body))],
        )
