"""One admission rule for the event loop and the model, through the real app: a tenant's long
recalls do not hold another tenant's recall behind them, a recall answered without its vector
leaves nothing on the model, and a large body is parsed off the event loop.

The model is held (``HeldEmbedder``) to line requests up behind it; the order is read from the
calls the model received, never from the clock."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from semmem.serving.runtime import Runtime
from semmem.web.stored import STORE_PATH
from tests.support.model import HeldEmbedder
from tests.support.server import AUTH, JSON
from tests.support.web import Client, Reply, app_client, recall, remember, send

LONG = "tell me everything about the long weekend plans " * 1250  # 60 KB, within 64 KiB


def _runtime(client: Any) -> Runtime:
    runtime: Runtime = client.app.state.runtime
    return runtime


def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait for a condition the server's state reaches (polled: nothing to wait on)."""
    event = threading.Event()
    for _ in range(3000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError(f"never: {what}")


def _in_thread(replies: list[Reply], call: Callable[[], Reply]) -> threading.Thread:
    thread = threading.Thread(target=lambda: replies.append(call()))
    thread.start()
    return thread


def _hold(c: Client, model: HeldEmbedder) -> tuple[list[Reply], threading.Thread]:
    """A remember in partition ``x`` in the model, held there."""
    model.hold()
    held: list[Reply] = []
    thread = _in_thread(held, lambda: remember_reply(c, "x", "holding the model"))
    assert model.entered.wait(30)
    return held, thread


def remember_reply(c: Client, partition: str, text: str) -> Reply:
    from tests.support.web import tool

    return send(c, tool("remember", {"text": text}, partition=partition))


def test_recall_another_tenants_recall_runs_before_a_tenants_queued_long_recalls(
        tmp_path: Path) -> None:
    """Six 60 KB recalls of tenant a wait for the model; tenant b's short recall, sent after
    them, is embedded after at most one of them (it was embedded with all six at once)."""
    model = HeldEmbedder()
    with app_client(tmp_path / "db", embedder=model, max_concurrency=64) as c:
        remember(c, "a", "The long weekend is in the mountains.")
        remember(c, "b", "Bea lives in Lisbon.")
        queue = _runtime(c).memory.model  # type: ignore[union-attr]
        held, holder = _hold(c, model)
        replies: list[Reply] = []
        longs = [_in_thread(replies, lambda i=i: send(c, recall(f"{i} {LONG}", partition="a")))
                 for i in range(6)]
        _until(lambda: queue.waiting == 6, "tenant a's recalls queued")
        b: list[Reply] = []
        short = _in_thread(b, lambda: send(c, recall("Bea lives where?", partition="b")))
        _until(lambda: queue.waiting == 7, "tenant b's recall queued")
        model.open.set()
        for thread in (holder, short, *longs):
            thread.join(60)
    assert [r.status_code for r in (*held, *b, *replies)] == [200] * 8
    assert "Bea lives in Lisbon" in b[0].json()["text"]
    ours = model.call_of("Bea lives where?")
    theirs = sorted(model.call_of(f"{i} {LONG}") for i in range(6))
    assert theirs[0] < ours < theirs[1]
    assert model.calls[ours] == ["Bea lives where?"]


@pytest.mark.parametrize("stored", [True, False], ids=["stored-facts", "empty"])
def test_recall_answered_while_the_model_is_busy_leaves_nothing_on_the_model(
        tmp_path: Path, stored: bool) -> None:
    """A recall of an empty partition needs no vector: answered while the model is held, its
    text never reaches the model (the control: a partition with facts needs it, and waits)."""
    model = HeldEmbedder()
    with app_client(tmp_path / "db", embedder=model, max_concurrency=64) as c:
        if stored:
            remember(c, "e", "Eve keeps bees.")
        queue = _runtime(c).memory.model  # type: ignore[union-attr]
        held, holder = _hold(c, model)
        replies: list[Reply] = []
        asking = _in_thread(replies, lambda: send(c, recall(LONG, partition="e")))
        if stored:
            _until(lambda: queue.waiting == 1, "the recall waits for the model")
            assert not replies
        else:
            asking.join(30)
            assert replies[0].status_code == 200 and replies[0].json()["sources"] == []
        model.open.set()
        holder.join(30)
        asking.join(30)
        assert held[0].status_code == 200 and replies[0].status_code == 200
        remember(c, "x", "after everything queued before it")  # the queue drained past it
    assert (model.call_of(LONG) >= 0) is stored


def test_recall_answered_while_its_vector_is_on_the_model_stops_the_model(
        tmp_path: Path) -> None:
    """A recall of an empty partition whose text the model took already: answered, and the
    model's call for it stopped (nobody awaits it), not run to its end."""
    model = HeldEmbedder()
    with app_client(tmp_path / "db", embedder=model, max_concurrency=64) as c:
        model.hold()
        r = send(c, recall(LONG, partition="e"))  # answered while the model stays closed
        assert r.status_code == 200 and r.json()["sources"] == []
        model.open.set()
        remember(c, "x", "after everything before it")
    completed = [call for call in model.calls if call not in model.stopped]
    assert not any(LONG in call for call in completed)


def _slow_store_body() -> bytes:
    """An 8 MiB ``POST /store`` body whose JSON takes seconds to read (hundreds of thousands
    of small objects) and is refused after it (its last operation is unknown)."""
    value = {"a": [{"x": i} for i in range(20_000)]}
    ops: list[Any] = [{"op": "put", "namespace": ["n"], "key": f"k{i}", "value": value}
                      for i in range(32)]
    ops.append({"op": "unknown"})
    body = json.dumps({"ops": ops}, separators=(",", ":")).encode()
    assert len(body) <= 8 * 1024 * 1024
    return body


def test_store_a_large_body_is_parsed_off_the_event_loop(tmp_path: Path) -> None:
    """While a large /store body is being parsed (its body read, its slot taken, no answer
    yet), /healthz answers, and the parse's refusal comes after."""
    with app_client(tmp_path / "db", max_concurrency=64) as c:
        rt = _runtime(c)
        replies: list[Reply] = []
        body = _slow_store_body()
        storing = _in_thread(replies, lambda: c.post(STORE_PATH, content=body,
                                                     headers={**AUTH, **JSON}))
        _until(lambda: rt.limiter.active == 1, "the body read, its parse begun")
        health = c.get("/healthz")
        parsing = not replies and rt.limiter.active == 1
        storing.join(120)
    assert health.status_code == 200
    assert parsing, "/healthz waited for the parse"
    assert replies[0].status_code == 422, replies[0].text
