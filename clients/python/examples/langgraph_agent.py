"""A LangGraph agent whose memory is semmem: ``python langgraph_agent.py URL TOKEN``.

The demo model below replays two scripted turns so the example runs offline; pass any chat
model with tool calling instead (e.g. ``ChatOpenAI(model=...)`` from langchain-openai).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.language_models import (
    GenericFakeChatModel,
    LanguageModelInput,
    LanguageModelLike,
)
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver

from semmem_client import Client
from semmem_client.langchain import LangChainMemory

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # in langgraph 1.x it also lives in langchain.agents
    from langgraph.prebuilt import create_react_agent


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


def main(url: str, token: str, partition: str = "alice", memory_path: str = "/memory",
         model: LanguageModelLike | None = None) -> list[str]:
    """Two conversations (threads); the second knows what the first stored."""
    with Client(url, token, memory_path=memory_path) as client:
        memory = LangChainMemory(client, partition, max_bytes=1024)
        agent = create_react_agent(model or demo_model(), memory.tools(),
                                   pre_model_hook=memory.pre_model_hook("You are a cook."),
                                   checkpointer=InMemorySaver())
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
