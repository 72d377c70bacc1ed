"""LangChain and LangGraph: the memory tools as ``BaseTool``s, recall into the system prompt
as LangChain 1.x ``create_agent`` middleware (once per user turn) or as a LangGraph
``pre_model_hook`` (before every model call).

    memory = LangChainMemory(Client(url, token))            # the partition: per request
    agent = create_agent(model, system_prompt="You are helpful.",
                         middleware=[memory.middleware()], checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "hi")]},
                 {"configurable": {"thread_id": "t1", "user_id": "alice"}})

Install with ``pip install 'semmem-client[langchain]'``. With no fixed ``partition`` each call
takes the user from ``config["configurable"][partition_key]`` (default ``user_id``), its
partition ``user_partition(user)`` (the one mapping of every adapter: user ``a/b`` is
partition ``a%2Fb``, as the LangGraph store's namespace ``("a/b",)``), so one agent serves
every user; each (user, thread) keeps the cursor of its own latest recall.
``memory.middleware(ingest=True)`` also ingests each finished turn into the session named by
the thread id (the user's message and the assistant's answer, stored as pieces).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ModelCallResult, ModelResponse, PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from pydantic import ConfigDict

from semmem_client._async import AsyncClient
from semmem_client._binding import Binding, Key, user_partition, with_memory
from semmem_client._client import Client
from semmem_client._tools import ToolDefinition

NO_THREAD = "-"


def _configurable(config: RunnableConfig | None) -> dict[str, Any]:
    return dict((config or {}).get("configurable") or {})


def thread_of(config: RunnableConfig | None) -> str:
    """The LangGraph thread a call runs in (one cursor per thread)."""
    return str(_configurable(config).get("thread_id", NO_THREAD))


def finished_turn(messages: Sequence[AnyMessage]) -> list[dict[str, str]]:
    """The last user turn as ``ingest`` takes it: the last user message and the assistant's
    messages with text after it (tool calls and tool results left out)."""
    start = next((i for i in range(len(messages) - 1, -1, -1)
                  if isinstance(messages[i], HumanMessage)), None)
    if start is None:
        return []
    turn = []
    for message in messages[start:]:
        role = "user" if isinstance(message, HumanMessage) else \
            "assistant" if isinstance(message, AIMessage) else None
        if role is not None and message.text.strip():
            turn.append({"role": role, "content": message.text})
    return turn


def latest_user_text(messages: Sequence[AnyMessage]) -> str | None:
    """The text of the last user message, ``None`` when there is none (or it is empty)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text if message.text else None
    return None


class MemoryTool(BaseTool):
    """One memory tool (``memory_<name>``), its partition from the call's config; answers JSON
    text."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    memory: LangChainMemory
    tool: str

    def _run(self, config: RunnableConfig, **arguments: Any) -> str:
        return self.memory.call(self.memory.key(config), self.tool, arguments)

    async def _arun(self, config: RunnableConfig, **arguments: Any) -> str:
        return await self.memory.acall(self.memory.key(config), self.tool, arguments)


class SemmemState(AgentState[Any]):
    """The agent's state plus this turn's recalled memory (private: not in input or output)."""

    semmem_memory: NotRequired[Annotated[str, PrivateStateAttr]]


class SemmemMiddleware(AgentMiddleware[SemmemState, Any, Any]):
    """``create_agent`` middleware: recall once per user turn (``before_agent``, for the
    turn's user message), then put it after the system prompt of every model call of that
    turn; registers the memory tools. With ``ingest``, each finished turn (the user's message
    and the assistant's answer) is also stored as pieces in the session named by the thread
    (``after_agent``, ``POST /ingest``)."""

    state_schema = SemmemState

    def __init__(self, memory: LangChainMemory, *, ingest: bool = False) -> None:
        super().__init__()
        self.memory = memory
        self.tools = memory.tools()
        self.ingest = ingest

    def after_agent(self, state: SemmemState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Ingest the finished turn (with ``ingest``)."""
        turn = finished_turn(state["messages"]) if self.ingest else []
        if turn:
            partition, thread = self.memory.key(get_config())
            self.memory._blocking().ingest(partition, thread, turn)
        return None

    async def aafter_agent(self, state: SemmemState, runtime: Runtime[Any]
                           ) -> dict[str, Any] | None:
        """Ingest the finished turn (with ``ingest``; awaited)."""
        turn = finished_turn(state["messages"]) if self.ingest else []
        if turn:
            partition, thread = self.memory.key(get_config())
            client = self.memory.client
            if isinstance(client, Client):
                await asyncio.to_thread(client.ingest, partition, thread, turn)
            else:
                await client.ingest(partition, thread, turn)
        return None

    def before_agent(self, state: SemmemState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Recall for the turn's user message."""
        key = self.memory.key(get_config())
        return {"semmem_memory": self.memory.recall_text(
            key, latest_user_text(state["messages"]))}

    async def abefore_agent(self, state: SemmemState, runtime: Runtime[Any]
                            ) -> dict[str, Any]:
        """Recall for the turn's user message (awaited)."""
        key = self.memory.key(get_config())
        return {"semmem_memory": await self.memory.arecall_text(
            key, latest_user_text(state["messages"]))}

    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
                        ) -> ModelCallResult[Any]:
        """The model call with the turn's memory after the system prompt."""
        return handler(_with_turn_memory(request))

    async def awrap_model_call(
            self, request: ModelRequest[Any],
            handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelCallResult[Any]:
        """The model call with the turn's memory after the system prompt (awaited)."""
        return await handler(_with_turn_memory(request))


def _with_turn_memory(request: ModelRequest[Any]) -> ModelRequest[Any]:
    recalled = str(request.state.get("semmem_memory") or "")
    if not recalled:
        return request
    prompt = request.system_message.text if request.system_message is not None else ""
    return request.override(system_message=SystemMessage(with_memory(prompt, recalled)))


class LangChainMemory(Binding):
    """Users' memory for LangChain/LangGraph (see ``Binding`` for the options).

    ``partition``: one fixed partition, or ``None`` (default) to read the user per call from
    ``config["configurable"][partition_key]`` (its partition: ``user_partition``); a call
    without it is refused (``ValueError``) rather than sharing one memory between users.
    """

    def __init__(self, client: Client | AsyncClient, partition: str | None = None, *,
                 partition_key: str = "user_id", max_bytes: int = 2048,
                 tools: Sequence[ToolDefinition] | None = None) -> None:
        super().__init__(client, partition, max_bytes=max_bytes, tools=tools)
        self.partition_key = partition_key

    def key(self, config: RunnableConfig | None) -> Key:
        """The (partition, thread) of a call (``ValueError`` for no user or one whose partition
        is over 1,024 UTF-8 bytes)."""
        partition = self.partition
        if partition is None:
            chosen = _configurable(config).get(self.partition_key)
            if not isinstance(chosen, str) or not chosen:
                raise ValueError(f"no partition: pass config={{'configurable': "
                                 f"{{'{self.partition_key}': ...}}}} or a fixed partition")
            partition = user_partition(chosen)  # the one mapping (``_partitions``)
        return partition, thread_of(config)

    def tools(self) -> list[BaseTool]:
        """``memory_recall``, ``memory_search``, ``memory_remember``, ``memory_update``,
        ``memory_forget`` (writes only when the client's access is ``read-write``)."""
        return [MemoryTool(name=d.model_name, description=d.description,
                           args_schema=d.input_schema, memory=self, tool=d.name)
                for d in self.definitions]

    def middleware(self, *, ingest: bool = False) -> SemmemMiddleware:
        """``create_agent(..., middleware=[memory.middleware()])``: the tools, and recall once
        per user turn after the agent's ``system_prompt``; ``ingest=True`` also stores each
        finished turn in the thread's session (opt-in: the conversation becomes memory)."""
        return SemmemMiddleware(self, ingest=ingest)

    def pre_model_hook(self, prompt: str = "") -> Callable[..., dict[str, Any]]:
        """A LangGraph ``pre_model_hook`` (``create_react_agent``): recall for the latest user
        message before every model call and send the model ``prompt`` plus the recalled text as
        its system message (``llm_input_messages``: the thread's stored messages stay as they
        are)."""

        def recall_into_prompt(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            messages: list[AnyMessage] = list(state["messages"])
            system = with_memory(prompt, self.recall_text(self.key(config),
                                                          latest_user_text(messages)))
            rest = [m for m in messages if not isinstance(m, SystemMessage)]
            return {"llm_input_messages": [SystemMessage(system), *rest] if system else rest}

        return recall_into_prompt
