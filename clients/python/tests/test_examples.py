"""The examples run as written against a real server."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

from semmem_client import Client

from conftest import PATH
from tests.support.server import TOKEN, ServerProcess

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import langchain_agent
import langgraph_agent
import openai_agents_agent
import quickstart


def test_quickstart(server: ServerProcess, partition: str,
                    capsys: pytest.CaptureFixture[str]) -> None:
    """Five lines store and recall; the stale cursor prints a conflict."""
    assert quickstart.main(server.url, TOKEN, partition, PATH) == "1. Prefers SI units"
    out = capsys.readouterr().out
    assert "1. Prefers metric units" in out and "conflict (409)" in out


def test_langgraph_example(server: ServerProcess, partition: str) -> None:
    """The second thread's answer comes after a recall that holds the first thread's fact;
    the run warns of nothing (``create_react_agent`` warned it had moved)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answers = langgraph_agent.main(server.url, TOKEN, partition, PATH)
    assert [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)] == []
    assert answers == ["I'll remember that.", "Try a mushroom risotto: no meat, as you prefer."]
    assert _memory(server, partition) == "1. Is vegetarian"


def test_langchain_create_agent_example(server: ServerProcess, partition: str) -> None:
    """Alice's fact is stored once, in her partition only; her second turn is answered."""
    alice, bob = f"{partition}-a", f"{partition}-b"
    answers = langchain_agent.main(server.url, TOKEN, (alice, bob), PATH)
    assert answers == ["Noted.", "A mushroom risotto: no meat, as you prefer.",
                       "Any preferences I should know?"]
    assert (_memory(server, alice), _memory(server, bob)) == ("1. Is vegetarian", "")


def test_openai_agents_example(server: ServerProcess, partition: str) -> None:
    """Both runs finish; the fact is stored once."""
    answers = openai_agents_agent.main(server.url, TOKEN, partition, PATH)
    assert answers == ["Noted.", "From Lyon."]
    assert _memory(server, partition) == "1. Flies from Lyon"


def _memory(server: ServerProcess, partition: str) -> str:
    with Client(server.url, TOKEN, memory_path=PATH) as client:
        return client.recall(partition, None).text
