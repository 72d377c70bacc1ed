"""Spans as ``OTEL_TRACES_EXPORTER=console`` prints them (one indented JSON object each),
read back out of a server's output."""

from __future__ import annotations

import json
from typing import Any

_decoder = json.JSONDecoder()


def console_spans(output: str) -> list[dict[str, Any]]:
    """Every span object in ``output`` (other lines, log lines included, are skipped)."""
    spans: list[dict[str, Any]] = []
    at = 0
    while True:
        at = output.find("{\n", at)
        if at < 0:
            return spans
        try:
            value, end = _decoder.raw_decode(output, at)
        except json.JSONDecodeError:
            at += 2
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            spans.append(value)
        at = end


def span_id(span: dict[str, Any]) -> str:
    """A console span's id, as 16 hex digits."""
    return str(span["context"]["span_id"]).removeprefix("0x")


def parent_id(span: dict[str, Any]) -> str | None:
    """Its parent's id, as 16 hex digits, if it has one."""
    parent = span.get("parent_id")
    return None if parent is None else str(parent).removeprefix("0x")


def trace_id(span: dict[str, Any]) -> str:
    """Its trace id, as 32 hex digits."""
    return str(span["context"]["trace_id"]).removeprefix("0x")
