"""Scripted chat models for the adapters' tests: each answers the next scripted message and
records what it was sent (the system prompt included)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import Field


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from ``script`` in order and keeps every input in ``seen``."""

    script: list[AIMessage]
    seen: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any
                  ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.script.pop(0))])

    def bind_tools(self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
                   *, tool_choice: str | None = None, **kwargs: Any
                   ) -> Runnable[LanguageModelInput, AIMessage]:
        self.bound = [t.name if isinstance(t, BaseTool) else str(t) for t in tools]
        return self


def calls(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    """An assistant message calling one tool."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id,
                                      "type": "tool_call"}])
