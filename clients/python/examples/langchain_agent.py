"""A LangChain 1.x agent whose memory is semmem: ``python langchain_agent.py URL TOKEN``.

``create_agent`` with the memory middleware: one recall per user turn, the user taken from the
request's config, so one agent serves every user. The demo model below replays scripted turns
so the example runs offline; pass any chat model with tool calling instead.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import GenericFakeChatModel, LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver

from semmem_client import Client
from semmem_client.langchain import LangChainMemory


class DemoModel(GenericFakeChatModel):
    """Scripted replies, tools accepted (what a real model decides, replayed)."""

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
                   *, tool_choice: str | None = None, **kwargs: Any
                   ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def demo_model() -> DemoModel:
    """Alice's first turn stores a fact; her second answers from it; Bob knows nothing yet."""
    replies: Iterator[AIMessage] = iter([
        AIMessage("", tool_calls=[{"name": "memory_remember", "id": "call-1",
                                   "args": {"text": "Is vegetarian"}}]),
        AIMessage("Noted."),
        AIMessage("A mushroom risotto: no meat, as you prefer."),
        AIMessage("Any preferences I should know?"),
    ])
    return DemoModel(messages=replies)


def main(url: str, token: str, users: tuple[str, str] = ("alice", "bob"),
         memory_path: str = "/memory") -> list[str]:
    """Three turns: two of one user's (two threads), one of another user's."""
    alice, bob = users
    with Client(url, token, memory_path=memory_path) as client:
        memory = LangChainMemory(client, max_bytes=1024)
        agent: Any = create_agent(demo_model(), system_prompt="You are a cook.",
                                  middleware=[memory.middleware()],
                                  checkpointer=InMemorySaver())
        answers = []
        for user, thread, text in ((alice, "t1", "Remember that I am vegetarian"),
                                   (alice, "t2", "Suggest a dinner"),
                                   (bob, "t3", "Suggest a dinner")):
            state = agent.invoke({"messages": [("user", text)]},
                                 {"configurable": {"thread_id": thread, "user_id": user}})
            answers.append(str(state["messages"][-1].content))
        return answers


if __name__ == "__main__":
    for answer in main(sys.argv[1], sys.argv[2]):
        print(answer)
