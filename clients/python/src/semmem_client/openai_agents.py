"""OpenAI Agents SDK: the memory tools as function tools, and recall as dynamic instructions
(before every model call, for the run's latest user message).

    memory = AgentsMemory(AsyncClient(url, token))      # the partition: the run's context
    agent = Agent(name="assistant", instructions=memory.instructions("You are helpful."),
                  tools=memory.tools())
    await Runner.run(agent, "hi", context=User(user_id="alice"))

Install with ``pip install 'semmem-client[openai-agents]'``. With no fixed ``partition`` each
call takes the user from the run's context (``RunContextWrapper.context``):
``partition_of(context)`` when given, else the context itself when it is a string, else its
``user_id`` (attribute or key); its partition is ``user_partition(user)``, the one mapping of
every adapter (user ``a/b`` is partition ``a%2Fb``, as the LangGraph store's ``("a/b",)``).
Each run keeps the cursor of its latest recall, which its tool calls carry. An
``AsyncClient`` is awaited on the SDK's loop; a ``Client`` runs in a worker thread.

No ``Session``: the SDK's sessions keep a run's transcript (every message and tool item, in
order, with ``pop_item``), while semmem keeps durable facts — deduplicated, at most 2,000
characters, ranked by relevance, purged when forgotten. A transcript stored as facts would
lose order and repeats and would be recalled as if it were knowledge; keep the SDK's own
session (e.g. ``SQLiteSession``) for history and semmem for what outlives it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agents import Agent, FunctionTool, RunContextWrapper, Tool
from agents.tool_context import ToolContext

from semmem_client._async import AsyncClient
from semmem_client._binding import Binding, Key, user_partition, with_memory
from semmem_client._client import Client
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


def user_id_of(context: Any) -> str | None:
    """The default partition of a run's context: itself if a string, else its ``user_id``."""
    if isinstance(context, str):
        return context
    chosen = context.get("user_id") if isinstance(context, Mapping) \
        else getattr(context, "user_id", None)
    return chosen if isinstance(chosen, str) else None


class AgentsMemory(Binding):
    """Users' memory for the OpenAI Agents SDK (see ``Binding`` for the options)."""

    def __init__(self, client: Client | AsyncClient, partition: str | None = None, *,
                 partition_of: Callable[[Any], str | None] = user_id_of, max_bytes: int = 2048,
                 tools: list[ToolDefinition] | None = None) -> None:
        super().__init__(client, partition, max_bytes=max_bytes, tools=tools)
        self.partition_of = partition_of

    def key(self, context: RunContextWrapper[Any]) -> Key:
        """The (partition, run) of a call; ``ValueError`` when the context names no user."""
        if self.partition is not None:
            return self.partition, run_of(context)
        user = self.partition_of(context.context)
        if not isinstance(user, str) or not user:
            raise ValueError("no partition: give the run a context with a user_id "
                             "(Runner.run(..., context=...)), a partition_of, or a partition")
        return user_partition(user), run_of(context)  # the one mapping (``_partitions``)

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
            recalled = await self.arecall_text(self.key(context), latest_user_text(context))
            return with_memory(prompt, recalled)

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
            return await self.acall(self.key(context), definition.name, parsed)

        return FunctionTool(name=definition.model_name, description=definition.description,
                            params_json_schema=definition.input_schema, on_invoke_tool=invoke,
                            strict_json_schema=False)
