"""LangChain and LangGraph: the memory tools as ``BaseTool``s bound to a partition, and a
pre-model step that recalls for the latest user message into the system prompt.

    memory = LangChainMemory(Client(url, token), partition="alice")
    agent = create_react_agent(model, memory.tools(), checkpointer=InMemorySaver(),
                               pre_model_hook=memory.pre_model_hook("You are a helpful agent."))

Install with ``pip install 'semmem-client[langchain]'``. Each LangGraph thread keeps the cursor
of its own latest recall, so the edits of one conversation never use another's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import ConfigDict

from semmem_client._binding import Binding
from semmem_client._client import Client
from semmem_client._tools import ToolDefinition

NO_THREAD = "-"


def thread_of(config: RunnableConfig | None) -> str:
    """The LangGraph thread a call runs in (one cursor per thread)."""
    configurable = (config or {}).get("configurable") or {}
    return str(configurable.get("thread_id", NO_THREAD))


class MemoryTool(BaseTool):
    """One memory tool (``memory_<name>``) of a bound partition; answers JSON text."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    binding: Binding
    tool: str

    def _run(self, config: RunnableConfig, **arguments: Any) -> str:
        return self.binding.call(thread_of(config), self.tool, arguments)

    async def _arun(self, config: RunnableConfig, **arguments: Any) -> str:
        return await asyncio.to_thread(self.binding.call, thread_of(config), self.tool,
                                       arguments)


def _latest_user_text(messages: Sequence[AnyMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text if message.text else None
    return None


class LangChainMemory(Binding):
    """A partition's memory for LangChain/LangGraph (see ``Binding`` for the options)."""

    def __init__(self, client: Client, partition: str, *, max_bytes: int = 2048,
                 tools: Sequence[ToolDefinition] | None = None) -> None:
        super().__init__(client, partition, max_bytes=max_bytes, tools=tools)

    def tools(self) -> list[BaseTool]:
        """``memory_recall``, ``memory_search``, ``memory_remember``, ``memory_update``,
        ``memory_forget`` (writes only when the client's access is ``read-write``)."""
        return [MemoryTool(name=d.model_name, description=d.description,
                           args_schema=d.input_schema, binding=self, tool=d.name)
                for d in self.definitions]

    def pre_model_hook(self, prompt: str = "") -> Callable[..., dict[str, Any]]:
        """A LangGraph ``pre_model_hook``: recall for the latest user message and send the
        model ``prompt`` plus the recalled text as its system message (``llm_input_messages``:
        the thread's stored messages stay as they are)."""

        def recall_into_prompt(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            messages: list[AnyMessage] = list(state["messages"])
            system = self.system_prompt(thread_of(config), _latest_user_text(messages), prompt)
            rest = [m for m in messages if not isinstance(m, SystemMessage)]
            return {"llm_input_messages": [SystemMessage(system), *rest] if system else rest}

        return recall_into_prompt
