"""OpenTelemetry traces, when the standard ``OTEL_*`` variables ask for them (the ``otel``
extra): the only module importing the SDK, and only from ``setup``.

Tracing is on when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``) or an
OTLP endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``),
unless ``OTEL_SDK_DISABLED=true``. Unconfigured, nothing of the SDK or an exporter is imported
and nothing connects anywhere. OTLP goes over HTTP/protobuf (``OTEL_EXPORTER_OTLP_*`` read by
the exporter itself: endpoint, headers, timeout); the console exporter prints each span as
JSON on stdout. Incoming ``traceparent`` headers are read with ``OTEL_PROPAGATORS`` (default
W3C trace context and baggage).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any, TextIO

from semmem import tracing
from semmem.errors import InvalidInput, SemmemError
from semmem.serving import logs

EXPORTERS = ("otlp", "console")
ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def exporters(env: Mapping[str, str]) -> list[str]:
    """The trace exporters ``env`` configures (none: tracing stays off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",")
             if e.strip()]
    if not named and any(env.get(k, "").strip() for k in ENDPOINTS):
        named = ["otlp"]
    return [e for e in named if e != "none"]


class _Span:
    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, key: str, value: tracing.Value) -> None:
        self._span.set_attribute(key, value)

    def rename(self, name: str) -> None:
        self._span.update_name(name)

    def fail(self, code: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", code)
        self._span.set_status(Status(StatusCode.ERROR, code))


class OtelTracer:
    """``semmem.tracing.Tracer`` over an OpenTelemetry tracer provider."""

    def __init__(self, provider: Any) -> None:
        from opentelemetry import propagate, trace

        self.provider = provider
        self._trace = trace
        self._propagate = propagate
        self._tracer = provider.get_tracer("semmem")

    @contextlib.contextmanager
    def span(self, name: str, carrier: Mapping[str, str] | None,
             server: bool) -> Iterator[tracing.Span]:
        """A span current for the ``with`` block; a server span continues ``carrier``'s trace
        unless a span is already current (an MCP request inside an HTTP one)."""
        trace = self._trace
        parent = None
        if server and carrier is not None \
                and not trace.get_current_span().get_span_context().is_valid:
            parent = self._propagate.extract(carrier)
        kind = trace.SpanKind.SERVER if server else trace.SpanKind.INTERNAL
        # Exceptions are described by their type and code only: a message may quote input.
        with self._tracer.start_as_current_span(
                name, context=parent, kind=kind, record_exception=False,
                set_status_on_exception=False) as span:
            if server:
                logs.note_trace(self.trace_id())
            try:
                yield _Span(span)
            except BaseException as exc:
                _Span(span).fail(exc.code if isinstance(exc, SemmemError)
                                 else type(exc).__name__)
                raise

    def trace_id(self) -> str | None:
        """The current span's trace id, if it is recording."""
        ctx = self._trace.get_current_span().get_span_context()
        return format(ctx.trace_id, "032x") if ctx.is_valid else None

    def shutdown(self) -> None:
        """Export what is pending and stop."""
        self.provider.shutdown()


def setup(env: Mapping[str, str] | None = None, console: TextIO | None = None
          ) -> OtelTracer | None:
    """Install a tracer as ``env`` (default ``os.environ``) configures, or nothing; the
    console exporter writes to ``console`` (default stdout; stderr under ``semmem mcp``, whose
    stdout carries the protocol).

    Raises:
        InvalidInput: tracing is configured but the ``otel`` extra is not installed, an
            exporter is unknown, or OTLP is asked over gRPC.
    """
    env = os.environ if env is None else env
    names = exporters(env)
    if not names:
        return None
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise InvalidInput(f"OTEL_TRACES_EXPORTER: unknown exporter {unknown[0]!r}; semmem "
                           f"exports to {', '.join(EXPORTERS)} or none")
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                       env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"))
    if "otlp" in names and protocol.strip() != "http/protobuf":
        raise InvalidInput(f"OTLP protocol {protocol!r}: semmem exports traces over "
                           "http/protobuf only")
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        raise InvalidInput("tracing is configured (OTEL_*) but the OpenTelemetry SDK is not "
                           "installed: pip install 'semmem[otel]'") from None
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by Resource.create.
    provider = TracerProvider(resource=Resource.create(
        {"service.name": env.get("OTEL_SERVICE_NAME") or "semmem"}))
    if "otlp" in names:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise InvalidInput("OTLP export needs the otel extra: pip install "
                               "'semmem[otel]'") from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if "console" in names:
        provider.add_span_processor(SimpleSpanProcessor(
            ConsoleSpanExporter(out=console or sys.stdout)))
    tracer = OtelTracer(provider)
    tracing.install(tracer)
    return tracer
