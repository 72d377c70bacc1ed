"""A LangGraph agent whose memory is semmem: ``python langgraph_agent.py URL TOKEN``.

The graph is LangGraph's own ReAct loop written out (a model node, a ``ToolNode``, and
``tools_condition`` between them): langgraph 1.x moved ``create_react_agent`` to
``langchain.agents.create_agent`` (see ``langchain_agent.py``) and warns when it is called.
The model node calls ``memory.pre_model_hook`` first: a recall for the latest user message,
put in the system message the model sees (the thread's stored messages are left alone).

The demo model below replays two scripted turns so the example runs offline; pass any chat
model with tool calling instead (e.g. ``ChatOpenAI(model=...)`` from langchain-openai).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.language_models import (
    GenericFakeChatModel,
    LanguageModelInput,
    LanguageModelLike,
)
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from semmem_client import Client
from semmem_client.langchain import LangChainMemory


class DemoModel(GenericFakeChatModel):
    """Scripted replies, tools accepted (what a real model decides, replayed)."""

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
                   *, tool_choice: str | None = None, **kwargs: Any
                   ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def demo_model() -> DemoModel:
    """Thread 1: remember a fact. Thread 2: answer from the recalled memory."""
    replies: Iterator[AIMessage] = iter([
        AIMessage("", tool_calls=[{"name": "memory_remember", "id": "call-1",
                                   "args": {"text": "Is vegetarian"}}]),
        AIMessage("I'll remember that."),
        AIMessage("Try a mushroom risotto: no meat, as you prefer."),
    ])
    return DemoModel(messages=replies)


def agent_graph(model: LanguageModelLike, memory: LangChainMemory, prompt: str
                ) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The ReAct loop: recall, then the model; its tool calls run, then the model again."""
    tools = memory.tools()
    recall = memory.pre_model_hook(prompt)
    bound = model.bind_tools(tools) if hasattr(model, "bind_tools") else model

    def call_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        messages = recall(dict(state), config)["llm_input_messages"]
        return {"messages": [bound.invoke(messages, config)]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


def main(url: str, token: str, partition: str = "alice", memory_path: str = "/memory",
         model: LanguageModelLike | None = None) -> list[str]:
    """Two conversations (threads); the second knows what the first stored."""
    with Client(url, token, memory_path=memory_path) as client:
        memory = LangChainMemory(client, partition, max_bytes=1024)
        agent = agent_graph(model or demo_model(), memory, "You are a cook.")
        answers = []
        for thread, text in (("t1", "Remember that I am vegetarian"),
                             ("t2", "Suggest a dinner, I am vegetarian")):
            state = agent.invoke({"messages": [("user", text)]},
                                 {"configurable": {"thread_id": thread}})
            answers.append(str(state["messages"][-1].content))
        return answers


if __name__ == "__main__":
    for answer in main(sys.argv[1], sys.argv[2]):
        print(answer)
