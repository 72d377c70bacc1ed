"""What every framework adapter does: a user's memory for a model, its tools called by name
with the conversation's cursor, and the recall text for the system prompt.

The partition is fixed at construction or chosen per call by the adapter (LangChain: from
``config["configurable"]``; the Agents SDK: from the run's context), so one agent serves many
users; a user's partition is ``user_partition(user)``, the one mapping of every adapter. Each
(partition, conversation) keeps the cursor of its latest recall, which that conversation's
tool calls carry (``Cursors``: kept per user, as the server keeps MCP sessions' per token).
The client may be a ``Client`` (run in a worker thread from async code) or an
``AsyncClient`` (awaited; the sync entry points refuse it).
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from semmem_client._async import AsyncClient
from semmem_client._client import Client
from semmem_client._errors import Conflict, SemmemError
from semmem_client._partitions import user_partition
from semmem_client._tools import ToolDefinition, recall_definition

__all__ = ["Binding", "Cursors", "Key", "user_partition"]

CONVERSATIONS_PER_USER = 64  # conversations of one user whose latest recall's cursor is kept
MAX_USERS = 1024  # users whose cursors are kept; the least recently active user's go first
LOST_BITS = 1 << 16  # the set of conversations that lost their cursor, as hashed bits
EDITS = ("update", "forget")  # the tools a conversation's cursor checks
MEMORY_HEADER = "What you remember about the user (numbered facts; edit them by number):"
NOTHING = "(nothing remembered)"

Key = tuple[str, str]  # (partition, conversation)


def server_tools(client: Client | AsyncClient) -> list[ToolDefinition]:
    """The server's tool definitions, read once (``GET /openapi.json`` needs no token; an
    ``AsyncClient``'s are read with a short blocking call, as construction is not awaited)."""
    if isinstance(client, Client):
        return client.tools()
    with Client(client.url, memory_path=client.memory_path, deadline_s=client.deadline_s,
                retry=client.retry) as blocking:
        return blocking.tools()


def envelope_text(exc: SemmemError) -> str:
    """A refusal as the model reads it: the contract's error envelope."""
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.details:
        error["details"] = exc.details
    return json.dumps({"error": error}, ensure_ascii=False)


def with_memory(prompt: str, recalled: str) -> str:
    """``prompt`` followed by the recalled memory (nothing added when nothing recalled)."""
    if not recalled:
        return prompt
    memory = f"{MEMORY_HEADER}\n{recalled}"
    return f"{prompt}\n\n{memory}" if prompt else memory


class Cursors:
    """The cursor of each conversation's latest recall, kept per user (partition): at most
    ``per_user`` conversations of one user, ``users`` users; one user's conversations never
    push out another's, and a user pushed out whole loses the cursors of its own.

    A conversation whose cursor was pushed out is remembered as having lost it (a fixed set of
    hashed bits: it never forgets one; another conversation's bit may say the same of one that
    never recalled, which then recalls first): its next edit is a conflict, never an edit sent
    without the cursor it should carry, and so never applied unchecked.
    """

    def __init__(self, per_user: int = CONVERSATIONS_PER_USER, users: int = MAX_USERS,
                 lost_bits: int = LOST_BITS) -> None:
        self.per_user = per_user
        self.users = users
        self._held: OrderedDict[str, OrderedDict[str, str | None]] = OrderedDict()
        self._lost = bytearray(max(1, lost_bits // 8))

    def _bit(self, key: Key) -> tuple[int, int]:
        at = hash(key) % (8 * len(self._lost))
        return at // 8, 1 << (at % 8)

    def _lose(self, key: Key) -> None:
        byte, bit = self._bit(key)
        self._lost[byte] |= bit

    def get(self, key: Key) -> str | None:
        """The cursor of ``key``'s latest recall, if kept."""
        held = self._held.get(key[0])
        return None if held is None else held.get(key[1])

    def lost(self, key: Key) -> bool:
        """Whether ``key`` recalled and its cursor is no longer kept."""
        held = self._held.get(key[0])
        if held is not None and key[1] in held:
            return False
        byte, bit = self._bit(key)
        return bool(self._lost[byte] & bit)

    def keep(self, key: Key, cursor: str | None) -> None:
        """Keep the cursor of ``key``'s latest recall."""
        user, conversation = key
        held = self._held.pop(user, None)
        if held is None:
            held = OrderedDict()
        self._held[user] = held  # the most recently active user last
        held.pop(conversation, None)
        held[conversation] = cursor
        while len(held) > self.per_user:
            self._lose((user, held.popitem(last=False)[0]))
        while len(self._held) > self.users:
            gone, conversations = self._held.popitem(last=False)
            for lost in conversations:
                self._lose((gone, lost))


def _lost_cursor() -> Conflict:
    return Conflict("this conversation's last recall is no longer remembered, so the edit "
                    "cannot be checked against it; call memory_recall again, then edit",
                    status=409)


class Binding:
    """A user's memory for a model: the five tools and the pre-model recall.

    ``partition``: the one partition of every call, or ``None`` to take it per call from the
    framework (see the adapter). ``tools`` default to the server's own (fetched once from
    ``GET /openapi.json``); ``max_bytes`` bounds the recalled text put in the system prompt.
    """

    def __init__(self, client: Client | AsyncClient, partition: str | None = None, *,
                 max_bytes: int = 2048, tools: Sequence[ToolDefinition] | None = None) -> None:
        self.client = client
        self.partition = partition
        self.max_bytes = max_bytes
        defined = list(tools) if tools is not None else server_tools(client)
        if client.access == "read":
            defined = [t for t in defined if t.access == "read"]
        self.definitions = [recall_definition(), *defined]
        self.cursors = Cursors()

    def _keep(self, key: Key, cursor: str | None) -> None:
        self.cursors.keep(key, cursor)

    def _cursor(self, key: Key, name: str) -> str | None:
        """The cursor ``key``'s call of tool ``name`` carries.

        Raises:
            Conflict: an edit whose conversation's cursor was pushed out (the server's answer
                to an MCP session in that case).
        """
        if name in EDITS and self.cursors.lost(key):
            raise _lost_cursor()
        return self.cursors.get(key)

    def _blocking(self) -> Client:
        if not isinstance(self.client, Client):
            raise TypeError("this adapter holds an AsyncClient: use the framework's async "
                            "entry points (ainvoke, Runner.run), or give it a Client")
        return self.client

    # ----- blocking ---------------------------------------------------------------------------
    def recall_text(self, key: Key, text: str | None) -> str:
        """Recall for ``text`` (the latest user message) in ``key``'s partition, keep the
        cursor for ``key``'s tool calls, and return the text (≤ ``max_bytes`` UTF-8 bytes)."""
        recall = self._blocking().recall(key[0], text, self.max_bytes)
        self._keep(key, recall.cursor)
        return recall.text

    def call(self, key: Key, name: str, arguments: dict[str, Any]) -> str:
        """Run tool ``name`` (``recall`` or a server tool) for ``key``: the JSON a model reads,
        the result as the server answered it or its error envelope (errors reach the model)."""
        try:
            if name == "recall":
                return self.recall_text(key, arguments.get("text")) or NOTHING
            result = self._blocking().tool(key[0], name, arguments, self._cursor(key, name))
        except SemmemError as exc:
            return envelope_text(exc)
        return json.dumps(result, ensure_ascii=False, sort_keys=True)

    # ----- async (either client) ----------------------------------------------------------------
    async def arecall_text(self, key: Key, text: str | None) -> str:
        """``recall_text``, awaited."""
        if isinstance(self.client, Client):
            return await asyncio.to_thread(self.recall_text, key, text)
        recall = await self.client.recall(key[0], text, self.max_bytes)
        self._keep(key, recall.cursor)
        return recall.text

    async def acall(self, key: Key, name: str, arguments: dict[str, Any]) -> str:
        """``call``, awaited."""
        if isinstance(self.client, Client):
            return await asyncio.to_thread(self.call, key, name, arguments)
        try:
            if name == "recall":
                return await self.arecall_text(key, arguments.get("text")) or NOTHING
            result = await self.client.tool(key[0], name, arguments, self._cursor(key, name))
        except SemmemError as exc:
            return envelope_text(exc)
        return json.dumps(result, ensure_ascii=False, sort_keys=True)
