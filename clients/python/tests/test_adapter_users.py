"""The adapters keep users apart as the server does: one user→partition mapping for every
adapter (the LangGraph store's), and cursors kept per user, an edit whose cursor was pushed
out answering conflict (as the server answers an MCP session), never applied unchecked."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import Agent, RunConfig, Runner

from semmem_client import Client
from semmem_client._binding import Cursors
from semmem_client.langchain import LangChainMemory
from semmem_client.langgraph import partition_of
from semmem_client.openai_agents import AgentsMemory
from test_openai_agents import ScriptedModel, User, _call, _say


def _config(user: str, thread: str) -> dict[str, Any]:
    return {"configurable": {"user_id": user, "thread_id": thread}}


def _tool(memory: LangChainMemory, name: str) -> Any:
    return {t.name: t for t in memory.tools()}[f"memory_{name}"]


def test_every_adapter_maps_a_user_as_the_store_maps_its_namespace(client: Client,
                                                                    partition: str) -> None:
    """LangChain and Agents used the user id raw as the partition: user ``alice/memories``
    wrote into the LangGraph store's namespace ``("alice", "memories")``, user ``a%2Fb`` into
    that of ``("a/b",)``."""
    slashed = f"{partition}/memories"
    _tool(LangChainMemory(client), "remember").invoke(
        {"text": "The plan is in the red folder"}, _config(slashed, "t"))
    assert client.recall(partition_of((partition, "memories")), None, 4096).text == ""
    assert "red folder" in client.recall(partition_of((slashed,)), None, 4096).text

    escaped = f"{partition}%2Fb"
    model = ScriptedModel([_call("memory_remember", {"text": "The key is under the mat"}, "c1"),
                           _say("Noted.")])
    memory = AgentsMemory(client)
    agent = Agent[User](name="assistant", instructions=memory.instructions(),
                        tools=memory.tools(), model=model)
    asyncio.run(Runner.run(agent, "remember it", context=User(escaped),
                           run_config=RunConfig(tracing_disabled=True)))
    assert client.recall(partition_of((f"{partition}/b",)), None, 4096).text == ""
    assert "under the mat" in client.recall(partition_of((escaped,)), None, 4096).text


def _stale(client: Client, memory: LangChainMemory, user: str) -> int:
    """A fact of ``user`` that changes after the conversation ``t``'s recall; its number."""
    update = _tool(memory, "update")
    n = int(json.loads(_tool(memory, "remember").invoke(
        {"text": "Lives in Lisbon"}, _config(user, "t")))["n"])
    memory.recall_text(memory.key(_config(user, "t")), None)  # type: ignore[arg-type]
    changed = update.invoke({"n": n, "text": "Lives in Porto"}, _config(user, "other"))
    assert json.loads(changed)["status"] == "stored"
    return n


def _edit(memory: LangChainMemory, user: str, n: int) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(_tool(memory, "update").invoke(
        {"n": n, "text": "Lives in Faro"}, _config(user, "t")))
    return answer


def test_other_users_do_not_push_out_a_users_cursor(client: Client, partition: str) -> None:
    """The cursor LRU (1,024 entries) was shared by every user: after 1,024 other
    conversations recalled, the victim's stale update went without a cursor and was applied."""
    memory = LangChainMemory(client)
    victim = f"{partition}-victim"
    n = _stale(client, memory, victim)
    for i in range(1100):  # 100 other users' 11 conversations each
        memory.recall_text(memory.key(_config(f"{partition}-u{i % 100}", f"t{i}")),  # type: ignore[arg-type]
                           None)
    refused = _edit(memory, victim, n)
    assert refused["error"]["code"] == "conflict", refused  # the server's: the cursor was sent
    assert "Porto" in client.recall(partition_of((victim,)), None, 4096).text


def test_a_pushed_out_cursor_answers_conflict(client: Client, partition: str) -> None:
    """A conversation whose cursor the adapter no longer keeps (its user's other conversations,
    or other users, pushed it out) is refused as a conflict, not sent without it."""
    for crowd in ("own conversations", "other users"):
        memory = LangChainMemory(client)
        memory.cursors = Cursors(per_user=2, users=2)
        victim = f"{partition}-{crowd[:3]}"
        n = _stale(client, memory, victim)
        for i in range(3):
            user = victim if crowd == "own conversations" else f"{partition}-o{i}"
            memory.recall_text(memory.key(_config(user, f"x{i}")), None)  # type: ignore[arg-type]
        refused = _edit(memory, victim, n)
        assert refused["error"]["code"] == "conflict", (crowd, refused)
        assert "recall" in refused["error"]["message"]
        assert "Porto" in client.recall(partition_of((victim,)), None, 4096).text
        # a recall gives the conversation its cursor back: the edit then goes through
        memory.recall_text(memory.key(_config(victim, "t")), None)  # type: ignore[arg-type]
        assert _edit(memory, victim, n)["status"] == "stored"
    # a conversation that never recalled is no such case: its edit is sent (and checked)
    memory = LangChainMemory(client)
    memory.cursors = Cursors(per_user=2, users=2)
    answer = _edit(memory, f"{partition}-fresh", 9)
    assert answer["error"]["code"] == "not_found"
