"""The memory tools as a model sees them: the server's four from its OpenAPI document (name,
description, access, argument schema, as it declares them to hosts), plus recall."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from semmem_client._errors import ProtocolError


@dataclass(frozen=True)
class ToolDefinition:
    """One tool: ``name`` as the server knows it (a model sees ``memory_<name>``)."""

    name: str
    description: str
    access: str
    input_schema: dict[str, Any]

    @property
    def model_name(self) -> str:
        """The name a model calls, as the contract's host names memory tools."""
        return f"memory_{self.name}"


def recall_definition() -> ToolDefinition:
    """Recall as a tool the model may call mid-turn (the server's recall operation)."""
    return ToolDefinition("recall", (
        "Get the remembered facts relevant to a text, most relevant first, as numbered lines "
        "'<n>. <text>' within a byte budget; facts that are not relevant are left out. "
        "Read-only. Call it again before updating or forgetting a fact, so the numbers you use "
        "are current. An empty text returns the most recently changed facts."), "read", {
            "type": "object",
            "properties": {"text": {"type": "string", "description":
                                    "What the facts should be relevant to."}},
            "required": ["text"],
            "additionalProperties": False,
        })


def tool_definitions(document: Any, memory_path: str) -> list[ToolDefinition]:
    """The tools of ``POST <memory_path>`` in a served OpenAPI document.

    Raises:
        ProtocolError: the document does not describe that path's tool calls.
    """
    try:
        post = document["paths"][memory_path]["post"]
        choices = post["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
        schemas = document["components"]["schemas"]
        tools = []
        for choice in choices:
            schema = schemas[choice["$ref"].rsplit("/", 1)[1]]
            tool = schema["properties"].get("tool")
            if tool is not None:
                tools.append(ToolDefinition(tool["const"], schema["description"],
                                            schema["x-access"],
                                            schema["properties"]["arguments"]))
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ProtocolError(f"the OpenAPI document does not describe the tools of "
                            f"POST {memory_path}: missing {exc}") from None
    return tools
