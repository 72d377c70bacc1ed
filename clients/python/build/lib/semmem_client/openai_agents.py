"""OpenAI Agents SDK: the memory tools as function tools bound to a partition, and recall as
dynamic instructions (before every model call, for the run's latest user message).

    memory = AgentsMemory(Client(url, token), partition="alice")
    agent = Agent(name="assistant", instructions=memory.instructions("You are helpful."),
                  tools=memory.tools())

Install with ``pip install 'semmem-client[openai-agents]'``. Each run keeps the cursor of its
latest recall, which its tool calls carry. The client is blocking: calls run in a thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper, Tool
from agents.tool_context import ToolContext

from semmem_client._binding import Binding
from semmem_client._tools import ToolDefinition


def run_of(context: RunContextWrapper[Any]) -> str:
    """The run a call belongs to: the SDK hands each tool call a copy of the run's context
    sharing its ``usage``, one per run."""
    return str(id(context.usage))


def latest_user_text(context: RunContextWrapper[Any]) -> str | None:
    """The text of the last user item of the run's input."""
    for item in reversed(context.turn_input):
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict)
                     and p.get("type") == "input_text" and isinstance(p.get("text"), str)]
            return " ".join(str(t) for t in texts) or None
    return None


class AgentsMemory(Binding):
    """A partition's memory for the OpenAI Agents SDK (see ``Binding`` for the options)."""

    def tools(self) -> list[Tool]:
        """``memory_recall``, ``memory_search``, ``memory_remember``, ``memory_update``,
        ``memory_forget`` (writes only when the client's access is ``read-write``)."""
        return [self._function_tool(d) for d in self.definitions]

    def instructions(self, prompt: str = "") -> Callable[[RunContextWrapper[Any], Agent[Any]],
                                                          Awaitable[str]]:
        """Dynamic instructions: ``prompt`` plus what recall finds for the latest user message
        (within ``max_bytes``), computed before every model call."""

        async def recall_into_instructions(context: RunContextWrapper[Any],
                                           agent: Agent[Any]) -> str:
            return await asyncio.to_thread(self.system_prompt, run_of(context),
                                           latest_user_text(context), prompt)

        return recall_into_instructions

    def _function_tool(self, definition: ToolDefinition) -> FunctionTool:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            try:
                parsed = json.loads(arguments) if arguments else {}
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                return json.dumps({"error": {"code": "invalid_arguments",
                                             "message": "arguments must be a JSON object"}})
            return await asyncio.to_thread(self.call, run_of(context), definition.name, parsed)

        return FunctionTool(name=definition.model_name, description=definition.description,
                            params_json_schema=definition.input_schema, on_invoke_tool=invoke,
                            strict_json_schema=False)
