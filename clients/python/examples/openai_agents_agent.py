"""An OpenAI Agents SDK agent whose memory is semmem: ``python openai_agents_agent.py URL TOKEN``.

The demo model below replays scripted turns so the example runs offline; drop ``model=`` (and
set OPENAI_API_KEY) to use a real one.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelResponse, RunConfig, Runner, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
)

from semmem_client import Client
from semmem_client.openai_agents import AgentsMemory


class DemoModel(Model):
    """Scripted outputs (what a real model decides, replayed)."""

    def __init__(self) -> None:
        call = ResponseFunctionToolCall(type="function_call", name="memory_remember",
                                        call_id="call-1", id="fc-1", status="completed",
                                        arguments=json.dumps({"text": "Flies from Lyon"}))
        self.outputs: list[ResponseOutputItem] = [call, _say("Noted."), _say("From Lyon.")]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=[self.outputs.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def _say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg", type="message", role="assistant",
                                 status="completed", content=[ResponseOutputText(
                                     type="output_text", text=text, annotations=[])])


def main(url: str, token: str, partition: str = "alice", memory_path: str = "/memory",
         model: Model | None = None) -> list[str]:
    """Two runs; the second's instructions hold what the first stored."""
    with Client(url, token, memory_path=memory_path) as client:
        memory = AgentsMemory(client, partition, max_bytes=1024)
        agent = Agent(name="travel", instructions=memory.instructions("You book flights."),
                      tools=memory.tools(), model=model or DemoModel())

        async def run() -> list[str]:
            config = RunConfig(tracing_disabled=model is None)
            return [str((await Runner.run(agent, text, run_config=config)).final_output)
                    for text in ("I always fly from Lyon", "Where do I fly from, Lyon?")]

        return asyncio.run(run())


if __name__ == "__main__":
    for answer in main(sys.argv[1], sys.argv[2]):
        print(answer)
