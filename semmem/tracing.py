"""Spans around semmem's steps, without OpenTelemetry: the core and the surfaces mark where
time goes here, and nothing happens unless a tracer was installed.

``semmem.serving.otel`` installs one when the standard ``OTEL_*`` variables configure tracing
(that module is the only one importing the OpenTelemetry SDK). Uninstalled, ``span`` returns
one shared null context: tracing off costs a global lookup per step. The tracer is process-wide
because OpenTelemetry's own provider is; attributes never carry a fact's text, a partition key
or a token (a partition is named by ``partition_id``, a hash).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Protocol

from semmem.contract import sha256_hex

Value = str | int | float | bool

# The GenAI memory conventions' operation names (gen_ai.operation.name, also the span's name).
SEARCH_MEMORY = "search_memory"
OPERATIONS = {"recall": SEARCH_MEMORY, "search": SEARCH_MEMORY, "remember": "create_memory",
              "update": "update_memory", "forget": "delete_memory"}


class Span(Protocol):
    """What a step may say about itself."""

    def set(self, key: str, value: Value) -> None:
        """Set one attribute."""

    def rename(self, name: str) -> None:
        """Name the span once its operation is known."""

    def fail(self, code: str) -> None:
        """Mark the step failed: ``error.type`` is ``code`` and the status ``ERROR``."""


class Tracer(Protocol):
    """What ``semmem.serving.otel`` provides."""

    def span(self, name: str, carrier: Mapping[str, str] | None,
             server: bool) -> AbstractContextManager[Span]:
        """A span, current while the context is entered: a child of the current span, else of
        the ``traceparent`` in ``carrier``, else a root."""

    def trace_id(self) -> str | None:
        """The current span's trace id (32 hex digits), if one is recording."""


class _Off:
    def set(self, key: str, value: Value) -> None:
        return None

    def rename(self, name: str) -> None:
        return None

    def fail(self, code: str) -> None:
        return None


OFF: Span = _Off()
_NONE: AbstractContextManager[Span] = contextlib.nullcontext(OFF)
_tracer: Tracer | None = None


def install(tracer: Tracer | None) -> None:
    """Make ``tracer`` the process's (``None``: tracing off again)."""
    global _tracer
    _tracer = tracer


def enabled() -> bool:
    """Whether a tracer is installed."""
    return _tracer is not None


def span(name: str, carrier: Mapping[str, str] | None = None, *,
         server: bool = False) -> AbstractContextManager[Span]:
    """A span around one step (``server``: the span of one request, ``carrier`` its headers)."""
    tracer = _tracer
    if tracer is None:
        return _NONE
    return tracer.span(name, carrier, server)


def trace_id() -> str | None:
    """The current trace id, if tracing is on and a span is current."""
    tracer = _tracer
    return None if tracer is None else tracer.trace_id()


def partition_id(partition: str) -> str:
    """How a span names a partition: a hash (``gen_ai.memory.store.id``), never the key."""
    return sha256_hex(partition)[:16]


def operation(span: Span, name: str, partition: str, arguments: object = None) -> None:
    """Name a request's span after its GenAI memory operation (``recall`` and the tools);
    an edit (``update``, ``forget``) names its fact by number (``gen_ai.memory.record.id``)."""
    op = OPERATIONS.get(name)
    if op is None:
        return
    span.rename(op)
    span.set("gen_ai.operation.name", op)
    span.set("gen_ai.provider.name", "semmem")
    span.set("gen_ai.memory.store.id", partition_id(partition))
    if name in ("recall", "search"):
        span.set("semmem.tool", name)
    n = arguments.get("n") if isinstance(arguments, dict) and name in ("update", "forget") \
        else None
    if isinstance(n, int) and not isinstance(n, bool):
        span.set("gen_ai.memory.record.id", str(n))


def http(span: Span, method: str, route: str) -> None:
    """The HTTP request a server span serves: its method and route template."""
    span.set("http.request.method", method)
    span.set("http.route", route)


def mcp(span: Span, method: str, route: str | None) -> None:
    """The MCP request a server span serves: its JSON-RPC method and, over streamable HTTP,
    the HTTP request carrying it (every MCP message is a ``POST`` to ``route``)."""
    span.set("mcp.method.name", method)
    if route is not None:
        http(span, "POST", route)


def answered(span: Span, records: int, body_bytes: int) -> None:
    """What a request returned: records (facts returned, or written) and response bytes."""
    span.set("gen_ai.memory.record.count", records)
    span.set("semmem.response.bytes", body_bytes)
