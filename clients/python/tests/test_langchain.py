"""The LangChain/LangGraph adapter with a scripted chat model and a real server: what the
model stores in one thread is in its system prompt in another; edits carry the thread's
cursor; errors reach the model as the contract's envelope."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from semmem_client import Client
from semmem_client._binding import MEMORY_HEADER
from semmem_client.langchain import LangChainMemory

from conftest import PATH, async_client
from fakes import ScriptedChatModel, calls
from proxy import Proxy
from tests.support.server import TOKEN, ServerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent moved to langchain.agents in 1.0
    from langgraph.prebuilt import create_react_agent


def _ask(agent: Any, thread: str, text: str) -> list[Any]:
    state = agent.invoke({"messages": [("user", text)]},
                         {"configurable": {"thread_id": thread}})
    return list(state["messages"])


def test_fact_stored_in_one_thread_is_recalled_in_another(proxy: Proxy, proxied: Client,
                                                          partition: str) -> None:
    """Thread 1: the model calls memory_remember. Thread 2 (no shared messages): the
    pre-model step puts the fact in the system prompt, within the byte budget; the model's
    memory_forget there carries thread 2's recall cursor."""
    memory = LangChainMemory(proxied, partition, max_bytes=256)
    model = ScriptedChatModel(script=[
        calls("memory_remember", {"text": "Prefers metric units"}, "c1"),
        AIMessage("Noted."),
        calls("memory_forget", {"n": 1}, "c2"),
        AIMessage("Forgotten."),
    ])
    agent = create_react_agent(model, memory.tools(), checkpointer=InMemorySaver(),
                               pre_model_hook=memory.pre_model_hook("You are helpful."))
    assert model.bound == ["memory_recall", "memory_search", "memory_remember",
                           "memory_update", "memory_forget"]

    first = _ask(agent, "thread-1", "Remember that I prefer metric units")
    stored = [m for m in first if isinstance(m, ToolMessage)]
    assert json.loads(str(stored[0].content))["n"] == 1
    assert model.seen[0][0] == SystemMessage("You are helpful.")  # nothing remembered yet

    second = _ask(agent, "thread-2", "Which units do I prefer, metric units?")
    prompt = model.seen[2][0]
    assert isinstance(prompt, SystemMessage)
    assert prompt.content == f"You are helpful.\n\n{MEMORY_HEADER}\n1. Prefers metric units"
    assert [m.content for m in model.seen[2][1:]] == ["Which units do I prefer, metric units?"]
    assert json.loads(str(second[2].content))["forgotten"] is True

    recalls = [a for a in proxy.posts() if a.json()["operation"] == "recall"]
    remember, forget = (a.json() for a in proxy.posts() if a.json()["operation"] == "tool")
    assert len(recalls) == 4 and all(r.json()["maxBytes"] == 256 for r in recalls)
    assert remember["cursor"] == json.loads(recalls[0].answer)["cursor"]
    assert forget["cursor"] == json.loads(recalls[2].answer)["cursor"]
    assert forget["cursor"] != remember["cursor"]


def test_refusal_reaches_the_model_as_the_envelope(proxied: Client, partition: str) -> None:
    """A tool refused by the server (404) answers the model the error envelope, no raise."""
    memory = LangChainMemory(proxied, partition)
    forget = {t.name: t for t in memory.tools()}["memory_forget"]
    answer = json.loads(forget.invoke({"n": 9}, {"configurable": {"thread_id": "t"}}))
    assert answer["error"]["code"] == "not_found"


def test_read_only_binding_offers_no_write_tools(server: ServerProcess, partition: str
                                                 ) -> None:
    """With read access the model gets recall and search only."""
    with Client(server.url, TOKEN, memory_path=PATH, access="read") as reader:
        names = [t.name for t in LangChainMemory(reader, partition).tools()]
    assert names == ["memory_recall", "memory_search"]


def _user_turn(agent: Any, user: str, thread: str, text: str) -> list[Any]:
    state = agent.invoke({"messages": [("user", text)]},
                         {"configurable": {"thread_id": thread, "user_id": user}})
    return list(state["messages"])


def test_create_agent_middleware_recalls_once_per_user_turn(proxy: Proxy, proxied: Client,
                                                            partition: str) -> None:
    """LangChain 1.x ``create_agent``: the middleware brings the tools, recalls once per user
    turn (not per ReAct step: two model calls, one recall), puts the memory after the agent's
    system prompt in every model call of the turn, and takes the user from
    ``config["configurable"]["user_id"]``: another user's turn reads another partition."""
    alice, bob = f"{partition}-alice", f"{partition}-bob"
    memory = LangChainMemory(proxied)
    model = ScriptedChatModel(script=[
        calls("memory_remember", {"text": "Prefers metric units"}, "c1"), AIMessage("Noted."),
        calls("memory_search", {"query": "units"}, "c2"), AIMessage("Metric."),
        AIMessage("Hello Bob."),
    ])
    agent = create_agent(model, system_prompt="You are helpful.",
                         middleware=[memory.middleware()], checkpointer=InMemorySaver())

    _user_turn(agent, alice, "t1", "Remember that I prefer metric units")
    _user_turn(agent, alice, "t2", "Which units do I prefer?")
    _user_turn(agent, bob, "t3", "Hi, which units do I prefer?")
    assert model.bound == ["memory_recall", "memory_search", "memory_remember",
                           "memory_update", "memory_forget"]

    remembered = f"You are helpful.\n\n{MEMORY_HEADER}\n1. Prefers metric units"
    prompts = [m[0].content for m in model.seen]
    assert prompts == ["You are helpful."] * 2 + [remembered] * 2 + ["You are helpful."]
    recalls = [a.json() for a in proxy.posts() if a.json()["operation"] == "recall"]
    assert [(r["partition"], r["input"]["text"]) for r in recalls] == [
        (alice, "Remember that I prefer metric units"), (alice, "Which units do I prefer?"),
        (bob, "Hi, which units do I prefer?")]
    tools = [a.json() for a in proxy.posts() if a.json()["operation"] == "tool"]
    assert [(t["tool"], t["partition"]) for t in tools] == [("remember", alice),
                                                            ("search", alice)]
    with pytest.raises(ValueError, match="user_id"):
        _ask(agent, "x", "who am I?")  # no user_id in the config


def test_middleware_with_async_client(server: ServerProcess, partition: str) -> None:
    """``ainvoke`` with an ``AsyncClient``: the tool call and the turn's recall are awaited."""

    async def run() -> list[Any]:
        async with async_client(server.url) as client:
            memory = LangChainMemory(client)
            model = ScriptedChatModel(script=[
                calls("memory_remember", {"text": "Owns a red bike"}, "c1"), AIMessage("Ok."),
                AIMessage("Red.")])
            agent: Any = create_agent(model, middleware=[memory.middleware()],
                                      checkpointer=InMemorySaver())
            for thread, text in (("a1", "I own a red bike"), ("a2", "What bike do I own?")):
                await agent.ainvoke({"messages": [("user", text)]}, {"configurable": {
                    "thread_id": thread, "user_id": partition}})
            return [m[0].content for m in model.seen]

    prompts = asyncio.run(run())
    assert prompts[-1] == f"{MEMORY_HEADER}\n1. Owns a red bike"


def test_middleware_ingests_each_finished_turn_when_asked(owner: Client, proxied: Client,
                                                          partition: str) -> None:
    """``middleware(ingest=True)``: after each turn the user's message and the answer (not
    the tool calls) are stored in the thread's session; the next turn recalls them."""
    memory = LangChainMemory(proxied)
    model = ScriptedChatModel(script=[
        calls("memory_search", {"query": "trip"}, "c1"),
        AIMessage("Noted: you fly to Oslo on May 20."), AIMessage("On May 20.")])
    agent = create_agent(model, system_prompt="You are helpful.",
                         middleware=[memory.middleware(ingest=True)],
                         checkpointer=InMemorySaver())
    _user_turn(agent, partition, "t1", "I fly to Oslo on May 20")
    opened = owner.session(partition, "t1")
    assert [(m["role"], [i["text"] for i in m["items"]]) for m in opened["messages"]] == [
        ("user", ["I fly to Oslo on May 20"]),
        ("assistant", ["Noted: you fly to Oslo on May 20."])]
    _user_turn(agent, partition, "t1", "When do I fly?")
    assert "I fly to Oslo on May 20" in model.seen[-1][0].content  # recalled from the piece
    assert [m["role"] for m in owner.session(partition, "t1")["messages"]] == [
        "user", "assistant", "user", "assistant"]
    plain = LangChainMemory(proxied).middleware()
    assert plain.ingest is False
