"""What every framework adapter does: a partition's memory for a model, its tools called by
name with the turn's cursor, and the recall text for the system prompt."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from semmem_client._client import Client
from semmem_client._errors import SemmemError
from semmem_client._tools import ToolDefinition, recall_definition

MAX_CONVERSATIONS = 1024  # cursors kept; the oldest conversation's goes first
MEMORY_HEADER = "What you remember about the user (numbered facts; edit them by number):"


class Binding:
    """One partition's memory for a model: the five tools and the pre-model recall.

    Each conversation (``key``: a LangGraph thread, an Agents SDK run) keeps the cursor of its
    latest recall, which that conversation's tool calls carry. ``tools`` default to the
    server's own (fetched once from ``GET /openapi.json``); ``max_bytes`` bounds the recalled
    text put in the system prompt.
    """

    def __init__(self, client: Client, partition: str, *, max_bytes: int = 2048,
                 tools: Sequence[ToolDefinition] | None = None) -> None:
        self.client = client
        self.partition = partition
        self.max_bytes = max_bytes
        server_tools = list(tools) if tools is not None else client.tools()
        if client.access == "read":
            server_tools = [t for t in server_tools if t.access == "read"]
        self.definitions = [recall_definition(), *server_tools]
        self.cursors: dict[str, str | None] = {}

    def recall_text(self, key: str, text: str | None) -> str:
        """Recall for ``text`` (the latest user message), keep the cursor for ``key``'s tool
        calls, and return the text (at most ``max_bytes`` UTF-8 bytes; empty if nothing)."""
        recall = self.client.recall(self.partition, text, self.max_bytes)
        self.cursors.pop(key, None)
        self.cursors[key] = recall.cursor
        if len(self.cursors) > MAX_CONVERSATIONS:
            del self.cursors[next(iter(self.cursors))]
        return recall.text

    def system_prompt(self, key: str, text: str | None, prompt: str = "") -> str:
        """``prompt`` followed by the recalled memory (nothing added when nothing recalled)."""
        recalled = self.recall_text(key, text)
        if not recalled:
            return prompt
        return f"{prompt}\n\n{MEMORY_HEADER}\n{recalled}" if prompt else \
            f"{MEMORY_HEADER}\n{recalled}"

    def call(self, key: str, name: str, arguments: dict[str, Any]) -> str:
        """Run tool ``name`` (``recall`` or a server tool) for ``key``: the JSON a model reads,
        the result as the server answered it or its error envelope (errors reach the model)."""
        try:
            if name == "recall":
                return self.recall_text(key, arguments.get("text")) or "(nothing remembered)"
            result = self.client.tool(self.partition, name, arguments, self.cursors.get(key))
        except SemmemError as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.details:
                error["details"] = exc.details
            return json.dumps({"error": error}, ensure_ascii=False)
        return json.dumps(result, ensure_ascii=False, sort_keys=True)
