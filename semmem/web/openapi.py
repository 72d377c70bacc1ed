"""An OpenAPI 3.1 document of the provider endpoint, derived from the tool definitions.

The app serves it at ``GET /openapi.json`` (no token: it holds no data, see docs/http.md); hosts
get the ``httpMemory`` declaration instead. It is for tools that speak OpenAPI (the fuzz tests
run schemathesis on it) and for remote clients (``semmem_client``'s adapters read each tool's
name, description and argument schema from it), and it is built from the same tool definitions
and limits the server enforces, so it cannot drift. Each tool call's schema carries the tool's
description and, as extensions, its ``x-access`` and ``x-idempotent``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from semmem import __version__
from semmem.contract import MAX_ID_BYTES, MAX_RECALL_BYTES, MAX_SOURCES
from semmem.errors import SemmemError
from semmem.protocol.envelope import PROTOCOL_VERSION
from semmem.protocol.status import RETRY_AFTER_S, STATUS
from semmem.protocol.tools import SEARCH_RESULT, WRITE_RESULT, tools_for

_REF = "#/components/schemas/"


def _envelope(operation: str, extra: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "version": {"const": PROTOCOL_VERSION},
            "operation": {"const": operation},
            "operationId": {"type": "string", "minLength": 1},
            "partition": {"type": "string", "minLength": 1},
            "access": {"enum": ["read", "read-write"]},
            "deadlineAt": {"type": "string", "format": "date-time"},
            **extra,
        },
        "required": ["version", "operation", "operationId", "partition", "access",
                     "deadlineAt", *required],
    }


def _codes() -> dict[int, list[str]]:
    """Error codes each status can carry (from the one status table)."""
    by_status: dict[int, list[str]] = {}
    stack: list[type[SemmemError]] = [SemmemError]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        for base in cls.__mro__:
            if base in STATUS:
                by_status.setdefault(STATUS[base], [])
                if cls.code not in by_status[STATUS[base]]:
                    by_status[STATUS[base]].append(cls.code)
                break
    return by_status


def provider_openapi(path: str = "/memory", *, accepted: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``POST <path>``: requests, results and error envelopes
    (``accepted``: the tool descriptions of a server whose writes answer ``accepted``)."""
    schemas: dict[str, Any] = {
        "RecallRequest": _envelope("recall", {
            "input": {"type": "object", "properties": {"text": {"type": ["string", "null"]}},
                      "required": ["text"]},
            "maxBytes": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL_BYTES},
        }, ["input", "maxBytes"]),
        "Recall": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "sources": {"type": "array", "maxItems": MAX_SOURCES, "items": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "title": {"type": "string"},
                                   "revision": {"type": "string"},
                                   "updatedAt": {"type": "string"}},
                    "required": ["id"], "additionalProperties": False}},
                "cursor": {"type": "string"},
            },
            "required": ["text", "sources"],
            "additionalProperties": False,
        },
        "SearchResult": SEARCH_RESULT,
        "WriteResult": WRITE_RESULT,
        "ToolResult": {
            "type": "object",
            "properties": {"result": {"oneOf": [{"$ref": _REF + "SearchResult"},
                                                {"$ref": _REF + "WriteResult"}]}},
            "required": ["result"],
            "additionalProperties": False,
        },
    }
    tool_refs = []
    for spec in tools_for(accepted=accepted):
        name = f"{spec.name.capitalize()}Call"
        schemas[name] = _envelope("tool", {
            "tool": {"const": spec.name},
            "arguments": spec.declaration()["input"],
            "cursor": {"type": ["string", "null"], "maxLength": MAX_ID_BYTES},
        }, ["tool", "arguments"])
        schemas[name].update({"description": spec.description, "x-access": spec.access,
                              "x-idempotent": spec.idempotent})
        tool_refs.append({"$ref": _REF + name})

    responses: dict[str, Any] = {
        "200": {"description": "a recall or a tool result", "content": {"application/json": {
            "schema": {"oneOf": [{"$ref": _REF + "Recall"}, {"$ref": _REF + "ToolResult"}]}}}},
    }
    for status in sorted(_codes()):
        responses[str(status)] = _error_response(status)

    return {
        "openapi": "3.1.0",
        "info": {"title": "semmem HTTP memory provider", "version": __version__},
        "paths": {path: {"post": {
            "operationId": "provider",
            "summary": "recall, or call a memory tool (protocol version 1)",
            "security": [{"bearer": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "oneOf": [{"$ref": _REF + "RecallRequest"}, *tool_refs]}}}},
            "responses": responses,
        }}},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def ingest_openapi() -> dict[str, Any]:
    """``POST /ingest`` as an OpenAPI path item and its schemas (``semmem/conversations``)."""
    from semmem.conversations.messages import MAX_MESSAGES, MAX_ROLE_CHARS
    from semmem.items.address import MAX_KEY_CHARS

    request = {
        "type": "object",
        "properties": {
            "version": {"const": PROTOCOL_VERSION},
            "operationId": {"type": "string", "minLength": 1},
            "partition": {"type": "string", "minLength": 1},
            "sessionId": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS},
            "messages": {"type": "array", "minItems": 1, "maxItems": MAX_MESSAGES, "items": {
                "type": "object",
                "properties": {"role": {"type": "string", "minLength": 1,
                                        "maxLength": MAX_ROLE_CHARS},
                               "content": {"type": ["string", "null"]},
                               "at": {"type": "string", "format": "date-time"}},
                "required": ["role", "content"], "additionalProperties": False}},
            "deadlineAt": {"type": "string", "format": "date-time"},
            "access": {"enum": ["read", "read-write"]},
        },
        "required": ["version", "operationId", "partition", "sessionId", "messages"],
    }
    result = {
        "type": "object",
        "properties": {"status": {"enum": ["stored", "accepted"]},
                       "sessionId": {"type": "string"},
                       "items": {"type": "array", "items": {
                           "type": "array", "items": {"type": "integer", "minimum": 1}}},
                       "count": {"type": "integer", "minimum": 0}},
        "required": ["status", "sessionId", "items", "count"],
        "additionalProperties": False,
    }
    responses: dict[str, Any] = {"200": {"description": "each message's piece numbers",
                                         "content": {"application/json": {
                                             "schema": {"$ref": _REF + "IngestResult"}}}}}
    for status in sorted(_codes()):
        responses[str(status)] = _error_response(status)
    return {"schemas": {"IngestRequest": request, "IngestResult": result},
            "path": {"post": {
                "operationId": "ingest",
                "summary": "store a conversation session's messages as pieces",
                "security": [{"bearer": []}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": _REF + "IngestRequest"}}}},
                "responses": responses}}}


def store_openapi() -> dict[str, Any]:
    """``POST /store`` as an OpenAPI path item and its schemas (``semmem/stored``); each
    operation's own fields are checked by the server (422), not described one by one."""
    from semmem.stored.requests import MAX_OPS

    request = {"type": "object", "properties": {"ops": {
        "type": "array", "maxItems": MAX_OPS, "items": {
            "type": "object", "properties": {"op": {"enum": ["get", "put", "search", "list"]}},
            "required": ["op"]}}}, "required": ["ops"]}
    result = {"type": "object", "properties": {"results": {"type": "array"}},
              "required": ["results"]}
    responses: dict[str, Any] = {"200": {"description": "one result per operation",
                                         "content": {"application/json": {
                                             "schema": {"$ref": _REF + "StoreResult"}}}}}
    for status in sorted(_codes()):
        responses[str(status)] = _error_response(status)
    return {"schemas": {"StoreRequest": request, "StoreResult": result},
            "path": {"post": {
                "operationId": "store",
                "summary": "a batch of LangGraph store operations on the application's items",
                "security": [{"bearer": []}],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": _REF + "StoreRequest"}}}},
                "responses": responses}}}


def _error_response(status: int) -> dict[str, Any]:
    """The documented response of an error status: the envelope with that status's codes."""
    codes = _codes()[status]
    schema = {
        "type": "object",
        "properties": {"error": {
            "type": "object",
            "properties": {"code": {"enum": sorted(codes)}, "message": {"type": "string"},
                           "details": {"type": "object"}},
            "required": ["code", "message"],
            "additionalProperties": False}},
        "required": ["error"],
        "additionalProperties": False,
    }
    entry: dict[str, Any] = {"description": ", ".join(sorted(codes)),
                             "content": {"application/json": {"schema": schema}}}
    if status in {STATUS[cls] for cls in RETRY_AFTER_S}:
        entry["headers"] = {"Retry-After": {"required": True, "schema": {"type": "string"}}}
    return entry


# What the admin API and the probes can answer besides 200 (FastAPI's description says 422
# for bad parameters; the app answers 400 with the error envelope).
_ADMIN_ERRORS = (400, 401, 403, 429, 503)
_OPS_ERRORS = {"/readyz": (503,)}
_ROUTE_ERRORS = {"/admin/item": (404,), "/admin/session": (404,)}  # not live: not_found
_NOT_JSON = {"/admin/export": "application/x-ndjson", "/metrics": "text/plain"}


def api_openapi(app: FastAPI, path: str = "/memory", *, accepted: bool = False
                ) -> dict[str, Any]:
    """The whole HTTP API as one OpenAPI 3.1 document: the provider endpoint, and the admin
    and ops endpoints as FastAPI describes them with their real error answers."""
    doc = provider_openapi(path, accepted=accepted)
    ingest = ingest_openapi()
    doc["paths"]["/ingest"] = ingest["path"]
    doc["components"]["schemas"].update(ingest["schemas"])
    stored = store_openapi()
    doc["paths"]["/store"] = stored["path"]
    doc["components"]["schemas"].update(stored["schemas"])
    described = app.openapi()
    for route, operations in described["paths"].items():
        errors = (_ADMIN_ERRORS if route.startswith("/admin") else _OPS_ERRORS.get(route, ())) \
            + _ROUTE_ERRORS.get(route, ())
        for operation in operations.values():
            responses = operation["responses"]
            responses.pop("422", None)
            if route in _NOT_JSON:
                responses["200"]["content"] = {_NOT_JSON[route]: {"schema": {"type": "string"}}}
            responses.update({str(status): _error_response(status) for status in errors})
            if route.startswith("/admin"):
                operation["security"] = [{"bearer": []}]
        doc["paths"][route] = operations
    extra = described.get("components", {}).get("schemas", {})
    doc["components"]["schemas"].update(
        {k: v for k, v in extra.items() if k not in ("HTTPValidationError", "ValidationError")})
    return doc
