"""The ``httpMemory`` declaration a host deploys, generated from the tool definitions.

``render_declaration`` checks the result against the contract's declaration rules before
printing it, so ``semmem declare`` can only print something a host accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from semmem.contract import MAX_RECALL_BYTES
from semmem.errors import InvalidInput
from semmem.protocol.tools import tools_for

MAX_TOOLS = 8
MIN_MAX_BYTES, MAX_MAX_BYTES = 1, MAX_RECALL_BYTES
TOOL_NAME = re.compile(r"[a-z0-9_]{1,32}")
TOOL_KEYS = {"name", "description", "access", "idempotent", "input"}
RESERVED_PROPERTY = "memory"

_TEMPLATE = """\
import {{
  bearer, defineConnection, defineMemory,
  httpMemory, useSecret,
}} from "@opencomputer/agent";

// Point origin at your semmem server; store one of its bearer tokens as the SEMMEM_TOKEN secret.
const connection = defineConnection({{
  id: "semmem",
  origin: "https://semmem.example.com",
  methods: ["POST"],
  pathPrefix: {path},
  headers: {{
    Authorization: bearer(useSecret("SEMMEM_TOKEN")),
  }},
}});

// The tools array, as JSON (`semmem declare --json` prints only this array).
const tools = {tools_json};

export const facts = defineMemory({{
  id: "facts",
  description: "Facts about the user and their work, remembered across sessions.",
  provider: httpMemory({{
    connection,
    path: {path},
    maxBytes: {max_bytes},
    tools,
  }}),
}});"""


def check_path(path: object) -> str:
    """The endpoint path if it follows the contract: one leading ``/``, no space/query/fragment.

    Raises:
        InvalidInput: the path breaks a rule.
    """
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidInput(f"path must start with '/': {path!r}")
    if path.startswith("//"):
        raise InvalidInput(f"path must have a single leading '/': {path!r}")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        raise InvalidInput(f"path must not contain whitespace or control characters: {path!r}")
    if "?" in path or "#" in path:
        raise InvalidInput(f"path must not contain a query or fragment: {path!r}")
    return path


def check_max_bytes(max_bytes: object) -> int:
    """``maxBytes`` if it is an integer from 1 to 16,384.

    Raises:
        InvalidInput: out of range or not an integer.
    """
    if type(max_bytes) is not int or not MIN_MAX_BYTES <= max_bytes <= MAX_MAX_BYTES:
        raise InvalidInput(
            f"maxBytes must be an integer from {MIN_MAX_BYTES} to {MAX_MAX_BYTES}: {max_bytes!r}"
        )
    return max_bytes


def check_tools(tools: Sequence[dict[str, Any]]) -> None:
    """Check a tools array against the contract's rules.

    Raises:
        InvalidInput: listing every rule broken.
    """
    problems: list[str] = []
    if len(tools) > MAX_TOOLS:
        problems.append(f"at most {MAX_TOOLS} tools are allowed, got {len(tools)}")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        name = tool.get("name")
        where = f"tool {name!r}" if isinstance(name, str) else f"tool #{i}"
        extra = set(tool) - TOOL_KEYS
        if extra:
            problems.append(f"{where}: unknown keys {sorted(extra)}")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            problems.append(f"{where}: name must be 1–32 lowercase letters, digits or underscores")
        elif name in seen:
            problems.append(f"{where}: duplicate name")
        else:
            seen.add(name)
        description = tool.get("description")
        if not isinstance(description, str) or not description.strip():
            problems.append(f"{where}: description is required")
        if tool.get("access") not in ("read", "write"):
            problems.append(f"{where}: access must be 'read' or 'write'")
        if not isinstance(tool.get("idempotent", False), bool):
            problems.append(f"{where}: idempotent must be true or false")
        problems.extend(f"{where}: {p}" for p in _schema_problems(tool.get("input")))
    if problems:
        raise InvalidInput("declaration breaks the contract: " + "; ".join(problems),
                           {"problems": problems})


def _schema_problems(schema: object) -> list[str]:
    if not isinstance(schema, dict):
        return ["input must be a JSON Schema object"]
    problems: list[str] = []
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        problems.append(f"input is not a valid JSON Schema 2020-12: {exc.message}")
    if schema.get("type") != "object":
        problems.append("input must be an object schema (type: object)")
    if schema.get("additionalProperties") is not False:
        problems.append("input must set additionalProperties: false")
    if _has_ref(schema):
        problems.append("input must not use $ref")
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if (isinstance(properties, dict) and RESERVED_PROPERTY in properties) or (
        isinstance(required, list) and RESERVED_PROPERTY in required
    ):
        problems.append("input must not have a top-level 'memory' property (reserved)")
    return problems


def _has_ref(value: object) -> bool:
    if isinstance(value, dict):
        return any(k in ("$ref", "$dynamicRef") or _has_ref(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_ref(v) for v in value)
    return False


def tools_declaration(*, accepted: bool = False, expiry: bool = False,
                      metadata: bool = False) -> list[dict[str, Any]]:
    """The tools array of the declaration, checked (``accepted``: for a server whose reads may
    lag its writes, ``SEMMEM_READ_CONSISTENCY_MS`` above zero; ``expiry``: ``remember`` takes
    ``expires_at``, ``SEMMEM_TOOL_EXPIRY``; ``metadata``: ``SEMMEM_TOOL_METADATA``)."""
    tools = [spec.declaration()
             for spec in tools_for(accepted=accepted, expiry=expiry, metadata=metadata)]
    check_tools(tools)
    return tools


def render_declaration(*, path: str = "/memory", max_bytes: int = 8192,
                       json_only: bool = False, accepted: bool = False,
                       expiry: bool = False, metadata: bool = False) -> str:
    """The ``httpMemory({...})`` declaration (TypeScript) with its tools array as JSON.

    Raises:
        InvalidInput: the path, ``maxBytes`` or a tool breaks the contract's rules.
    """
    check_path(path)
    check_max_bytes(max_bytes)
    tools = tools_declaration(accepted=accepted, expiry=expiry, metadata=metadata)
    tools_json = json.dumps(tools, indent=2, ensure_ascii=False)
    if json_only:
        return tools_json
    return _TEMPLATE.format(
        path=json.dumps(path, ensure_ascii=False),
        max_bytes=f"{max_bytes:_}",
        tools_json=tools_json,
    )
