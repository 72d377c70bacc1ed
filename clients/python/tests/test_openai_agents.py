"""The OpenAI Agents SDK adapter with a scripted model and a real server: the model's tool
call stores a fact; the next run's dynamic instructions hold it; tools carry the run's cursor."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent, ModelResponse, RunConfig, Runner, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from semmem_client import AsyncClient, Client
from semmem_client._binding import MEMORY_HEADER
from semmem_client.openai_agents import AgentsMemory

from conftest import PATH
from proxy import Proxy
from tests.support.server import TOKEN


class ScriptedModel(Model):
    """Answers from ``script`` in order; keeps the instructions and tools of every call."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.instructions: list[str | None] = []
        self.tools: list[list[str]] = []

    async def get_response(self, system_instructions: str | None, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:
        self.instructions.append(system_instructions)
        self.tools.append([t.name for t in kwargs["tools"]])
        return ModelResponse(output=[self.script.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def _call(name: str, arguments: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", name=name, call_id=call_id,
                                    arguments=json.dumps(arguments), id=f"fc_{call_id}",
                                    status="completed")


def _say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg", type="message", role="assistant",
                                 status="completed", content=[ResponseOutputText(
                                     type="output_text", text=text, annotations=[])])


def test_tool_stores_and_instructions_recall_in_the_next_run(proxy: Proxy, proxied: Client,
                                                             partition: str) -> None:
    """Run 1 calls memory_remember; run 2's instructions carry the fact (within the budget)
    and its memory_update carries run 2's recall cursor."""
    memory = AgentsMemory(proxied, partition, max_bytes=300)
    model = ScriptedModel([
        _call("memory_remember", {"text": "Allergic to peanuts"}, "c1"), _say("Noted."),
        _call("memory_update", {"n": 1, "text": "Allergic to peanuts and walnuts"}, "c2"),
        _say("Updated."),
    ])
    agent = Agent(name="assistant", instructions=memory.instructions("Be brief."),
                  tools=memory.tools(), model=model)
    config = RunConfig(tracing_disabled=True)

    async def run() -> tuple[Any, Any]:
        first = await Runner.run(agent, "I am allergic to peanuts", run_config=config)
        second = await Runner.run(agent, "Am I allergic to peanuts? Also walnuts",
                                  run_config=config)
        return first, second

    first, second = asyncio.run(run())
    assert (first.final_output, second.final_output) == ("Noted.", "Updated.")
    assert model.tools[0] == ["memory_recall", "memory_search", "memory_remember",
                              "memory_update", "memory_forget"]
    assert model.instructions[0] == "Be brief."  # nothing remembered yet
    assert model.instructions[2] == f"Be brief.\n\n{MEMORY_HEADER}\n1. Allergic to peanuts"

    recalls = [a for a in proxy.posts() if a.json()["operation"] == "recall"]
    remember, update = (a for a in proxy.posts() if a.json()["operation"] == "tool")
    assert [r.json()["input"]["text"] for r in recalls[1:3]] == [
        "I am allergic to peanuts", "Am I allergic to peanuts? Also walnuts"]
    assert all(r.json()["maxBytes"] == 300 for r in recalls)
    assert update.json()["cursor"] == json.loads(recalls[2].answer)["cursor"]
    assert json.loads(remember.answer)["result"]["n"] == 1
    assert json.loads(update.answer)["result"]["n"] == 1
    assert proxied.recall(partition, None).text == "1. Allergic to peanuts and walnuts"


@dataclass
class User:
    """A run's context, as an app defines it."""

    user_id: str


def test_async_client_with_the_partition_from_the_run_context(proxy: Proxy,
                                                               partition: str) -> None:
    """An ``AsyncClient`` works (awaited on the SDK's loop), and each run's partition is its
    context's ``user_id``: what alice's run stored is in her next run's instructions, not in
    bob's."""
    alice, bob = f"{partition}-alice", f"{partition}-bob"
    model = ScriptedModel([_call("memory_remember", {"text": "Allergic to peanuts"}, "c1"),
                           _say("Noted."), _say("Yes, peanuts."), _say("Nothing known.")])
    config = RunConfig(tracing_disabled=True)

    async def run() -> None:
        async with AsyncClient(proxy.url, TOKEN, memory_path=PATH) as client:
            memory = AgentsMemory(client)
            agent = Agent[User](name="assistant", instructions=memory.instructions("Be brief."),
                                tools=memory.tools(), model=model)
            for user, text in ((alice, "I am allergic to peanuts"),
                               (alice, "Am I allergic to peanuts?"),
                               (bob, "Am I allergic to peanuts?")):
                await Runner.run(agent, text, context=User(user), run_config=config)
            with pytest.raises(ValueError, match="user_id"):
                await Runner.run(agent, "who am I?", run_config=config)

    asyncio.run(run())
    remembered = f"Be brief.\n\n{MEMORY_HEADER}\n1. Allergic to peanuts"
    assert model.instructions == ["Be brief.", remembered, remembered, "Be brief."]
    bodies = [a.json() for a in proxy.posts()]
    assert [(b["operation"], b["partition"]) for b in bodies] == [
        ("recall", alice), ("tool", alice), ("recall", alice), ("recall", alice), ("recall", bob)]
