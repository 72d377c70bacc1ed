"""The one tool dispatcher: every tool call, over HTTP or MCP, goes through ``Dispatcher.call``.

The same checks in the same order on both surfaces — the tool exists, its arguments fit in a
request body, the binding may write, the arguments match the tool's schema — then the core
runs, the metrics count it, a write answers ``accepted`` where another replica's reads may lag,
and the result is fitted to the response limit as data. A surface only serialises the result
and maps refusals (``SemmemError``) into its own error form through ``protocol.status``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from semmem.contract import MAX_BODY
from semmem.errors import Forbidden, TooLarge, UnknownTool
from semmem.items.filters import Filter
from semmem.protocol.fitting import fit_recall, fit_search
from semmem.protocol.jsonio import dumps
from semmem.protocol.tools import ToolSpec
from semmem.rules import Operation
from semmem.serving.metrics import Metrics

if TYPE_CHECKING:
    from semmem.memory import Memory


@dataclass(frozen=True)
class ToolCall:
    """One tool call as a surface received it; arguments never choose the partition."""

    tool: str
    arguments: Any
    partition: str
    writable: bool
    operation_id: str | None = None  # no id: nothing to deduplicate a retry by
    cursor: str | None = None  # the recall this call follows: edits past it conflict
    deadline_ms: int | None = None
    # Whether the caller sent ``cursor`` (HTTP), so it is part of the call's identity, or the
    # server keeps it for the caller (an MCP session), so a re-sent request still replays.
    cursor_sent: bool = True
    scope: Filter | None = None  # the token's scope (configuration): what the call may reach

    def operation(self, arguments: dict[str, Any]) -> Operation | None:
        """The call's identity for idempotency, if it has an operation id."""
        if self.operation_id is None:
            return None
        cursor = self.cursor if self.cursor_sent else None
        within = "" if self.scope is None or self.scope.empty else self.scope.digest()
        return Operation.of(self.operation_id, self.tool, arguments, cursor, self.deadline_ms,
                            within)


Handler = Callable[["Memory", ToolCall, ToolSpec, dict[str, Any]], Awaitable[dict[str, Any]]]


async def _recall(memory: Memory, call: ToolCall, spec: ToolSpec,
                  args: dict[str, Any]) -> dict[str, Any]:
    recall = await memory.recall(call.partition, args.get("text"),
                                 args.get("max_bytes", spec.default("max_bytes")),
                                 filter=call.scope)
    return fit_recall(recall).wire()


async def _search(memory: Memory, call: ToolCall, spec: ToolSpec,
                  args: dict[str, Any]) -> dict[str, Any]:
    found = await memory.search(call.partition, args["query"],
                                args.get("limit", spec.default("limit")),
                                filter=within(call.scope, Filter.parse(args.get("filter"))))
    return fit_search(found)


async def _remember(memory: Memory, call: ToolCall, spec: ToolSpec,
                    args: dict[str, Any]) -> dict[str, Any]:
    return await memory.remember(call.partition, args["text"], op=call.operation(args),
                                 expires_at=args.get("expires_at"),
                                 metadata=args.get("metadata"), scope=call.scope)


async def _update(memory: Memory, call: ToolCall, spec: ToolSpec,
                  args: dict[str, Any]) -> dict[str, Any]:
    return await memory.update(call.partition, args["n"], args["text"], cursor=call.cursor,
                               op=call.operation(args), owner=False,
                               metadata=args.get("metadata"), scope=call.scope)


async def _forget(memory: Memory, call: ToolCall, spec: ToolSpec,
                  args: dict[str, Any]) -> dict[str, Any]:
    return await memory.forget(call.partition, args["n"], cursor=call.cursor,
                               op=call.operation(args), owner=False, scope=call.scope)


def within(scope: Filter | None, flt: Filter) -> Filter:
    """A call's own filter narrowed to its token's scope (never widened past it)."""
    return flt if scope is None else scope.both(flt)


def records(result: dict[str, Any]) -> int:
    """How many facts a tool's result returned (a search, a recall) or wrote (one)."""
    listed = result.get("items", result.get("sources"))
    return len(listed) if isinstance(listed, list) else 1


HANDLERS: dict[str, Handler] = {
    "recall": _recall, "search": _search, "remember": _remember, "update": _update,
    "forget": _forget,
}


class Dispatcher:
    """Runs the tools of one surface (``specs``, in the order they are listed to callers)."""

    def __init__(self, specs: Mapping[str, ToolSpec], metrics: Metrics, *,
                 accepted: bool) -> None:
        """``accepted``: writes answer ``"accepted"`` (reads may lag: a read-consistency
        interval above zero), else ``"stored"``."""
        unknown = set(specs) - set(HANDLERS)
        if unknown:
            raise ValueError(f"no handler for tools {sorted(unknown)}")
        self.specs = dict(specs)
        self.metrics = metrics
        self.accepted = accepted

    def spec(self, name: str) -> ToolSpec:
        """The tool called ``name``.

        Raises:
            UnknownTool: no such tool (the name is not echoed: messages are logged, and it
                is the caller's string).
        """
        spec = self.specs.get(name)
        if spec is None:
            raise UnknownTool("unknown tool; the tools are " + ", ".join(self.specs),
                              {"tools": list(self.specs)})
        return spec

    async def call(self, memory: Memory, call: ToolCall) -> dict[str, Any]:
        """Check and run one tool call; its result as data, fitted to the response limit.

        Raises:
            InvalidInput, TooLarge, Forbidden, InvalidArguments: the call is refused; and
            whatever the core raises.
        """
        spec = self.spec(call.tool)
        if len(dumps(call.arguments)) > MAX_BODY:
            raise TooLarge(f"the arguments are over the limit of {MAX_BODY} bytes",
                           {"limit": MAX_BODY})
        if spec.access == "write" and not call.writable:
            raise Forbidden(f"the {spec.name} tool writes; this memory is bound read-only")
        args = spec.validate(call.arguments)
        result = await HANDLERS[spec.name](memory, call, spec, args)
        if spec.access == "write" or (call.scope is None and not args.get("filter")):
            # a read's count under a scope or a filter is of the facts it covers, not the
            # partition's (a write's count is always the partition's)
            self.metrics.partition_count(call.partition, result.get("count"))
        if spec.access == "write":
            self.metrics.writes.labels(spec.name).inc()
            if self.accepted:
                # Another replica may read a version older than this write for a while; a
                # replay says the same, since it is what that replica may still show.
                result = {**result, "status": "accepted"}
        return result
