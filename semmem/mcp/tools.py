"""The MCP tools: the contract's tool definitions as they are, plus ``recall`` as a tool.

``search``, ``remember``, ``update`` and ``forget`` are the very ``ToolSpec`` objects the
provider endpoint validates with and ``semmem declare`` prints, so names, descriptions and
schemas cannot drift between the two surfaces. MCP only adds the hints a host reads.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from semmem.protocol.declaration import MAX_MAX_BYTES, MIN_MAX_BYTES
from semmem.protocol.tools import ToolSpec, tools_for

MAX_RECALL_TEXT = 16_000
# Writes that only ever add: every other write may replace or delete what is there.
ADDITIVE = frozenset({"remember"})


def recall_spec(default_max_bytes: int) -> ToolSpec:
    """``recall`` as a tool (the contract has it as an operation), with the server's budget."""
    return ToolSpec(
        name="recall",
        description=(
            "Get the remembered facts relevant to a text, most relevant first, as numbered lines "
            "'<n>. <text>' within a byte budget; facts that are not relevant are left out. "
            "Read-only. Call it with the user's request before answering, and again before "
            "updating or forgetting a fact, so the numbers you use are current. An empty text "
            "returns the most recently changed facts."
        ),
        access="read",
        idempotent=True,
        input={
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "maxLength": MAX_RECALL_TEXT,
                    "description": "What the facts should be relevant to, e.g. the user's request.",
                },
                "max_bytes": {
                    "type": "integer",
                    "minimum": MIN_MAX_BYTES,
                    "maximum": MAX_MAX_BYTES,
                    "default": default_max_bytes,
                    "description": (
                        f"Budget of the recalled text in UTF-8 bytes ({MIN_MAX_BYTES}–"
                        f"{MAX_MAX_BYTES:,}, default {default_max_bytes:,})."
                    ),
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    )


def specs(default_max_bytes: int, *, accepted: bool = False,
          expiry: bool = False, metadata: bool = False) -> dict[str, ToolSpec]:
    """Every MCP tool by name: ``recall`` first, then the contract's tools, described for a
    server whose writes answer ``accepted`` (reads may lag) or ``stored`` (``expiry``:
    ``remember`` takes ``expires_at``; ``metadata``: the writes' metadata, search's filter)."""
    ordered = (recall_spec(default_max_bytes),
               *tools_for(accepted=accepted, expiry=expiry, metadata=metadata))
    return {spec.name: spec for spec in ordered}


def hints(spec: ToolSpec) -> types.ToolAnnotations:
    """The behaviour hints of a tool, derived from its access and idempotency."""
    read = spec.access == "read"
    return types.ToolAnnotations(
        read_only_hint=read,
        destructive_hint=None if read else spec.name not in ADDITIVE,
        idempotent_hint=None if read else spec.idempotent,
        open_world_hint=False,  # the facts of one partition, nothing outside
    )


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """A tool entry of ``tools/list``: the declaration's schema, unchanged."""
    entry: dict[str, Any] = spec.declaration()
    return types.Tool(name=entry["name"], description=entry["description"],
                      input_schema=entry["input"], annotations=hints(spec))
