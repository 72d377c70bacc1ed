"""Domain errors as MCP tool errors: a result the model reads, saying what to do next.

The text is the contract's error message (the same words the provider endpoint sends) plus,
where the message does not already say it, the next step; server-side failures get the public
wording only, as over HTTP (their real message is logged).
"""

from __future__ import annotations

import logging

import mcp_types as types

from semmem.errors import (
    Forbidden,
    IdempotencyMismatch,
    InvalidArguments,
    InvalidInput,
    NotFound,
    NotReady,
    QuotaExceeded,
    SemmemError,
    TooLarge,
    UnknownTool,
)
from semmem.protocol.status import PUBLIC_5XX, status_of
from semmem.protocol.untrusted import loggable

log = logging.getLogger("semmem.mcp")

# Nearest class wins; Conflict, Overloaded and Unavailable already say "recall again" / "retry".
NEXT_STEP: dict[type[SemmemError], str] = {
    InvalidInput: "Fix the call and try again.",
    UnknownTool: "Call one of the tools listed.",
    InvalidArguments: "Fix the arguments and call the tool again.",
    NotFound: "Search memory to find the fact's current number.",
    Forbidden: "Do not retry: this memory can only be read here.",
    TooLarge: "Send less and try again.",
    IdempotencyMismatch: "Call the tool again as a new request.",
    QuotaExceeded: "Do not retry: forget or update facts that are no longer needed first.",
}


def _next_step(exc: SemmemError) -> str:
    for cls in type(exc).__mro__:
        if cls in NEXT_STEP:
            return NEXT_STEP[cls]
    return ""


def tool_error(exc: SemmemError, operation_id: str) -> types.CallToolResult:
    """The ``isError`` result for a domain error, logged like the provider endpoint logs it."""
    status = status_of(exc)
    log.log(logging.WARNING if status >= 500 else logging.INFO,
            "mcp operation %s: %d %s: %s", loggable(operation_id), status, exc.code,
            loggable(exc.message, 1000))
    message, details = exc.message, exc.details
    if status >= 500 and not isinstance(exc, NotReady):
        message, details = PUBLIC_5XX.get(status, PUBLIC_5XX[500]).format(op=operation_id), None
    step = _next_step(exc)
    text = f"{message}. {step}" if step and not message.endswith(".") else \
        f"{message} {step}".strip()
    error: dict[str, object] = {"code": exc.code, "message": message}
    if details:
        error["details"] = details
    return types.CallToolResult(content=[types.TextContent(text=text)],
                                structured_content={"error": error}, is_error=True)


def internal_error(operation_id: str) -> types.CallToolResult:
    """The ``isError`` result for an unexpected exception (the caller logs the traceback)."""
    message = PUBLIC_5XX[500].format(op=operation_id)
    return types.CallToolResult(
        content=[types.TextContent(text=message)],
        structured_content={"error": {"code": "internal", "message": message}}, is_error=True,
    )
