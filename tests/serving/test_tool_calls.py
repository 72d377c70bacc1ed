"""Tool calls over time: cursor conflicts and idempotent replays, in-process and over HTTP."""

from __future__ import annotations

from tests.support.web import Client, assert_error, host, recall, remember, send, tool

__all__ = ["host"]  # the fixture, imported to run every test here in-process and over HTTP


def _cursor(client: Client, partition: str) -> str:
    r = send(client, recall(None, partition=partition))
    assert r.status_code == 200
    cursor: str = r.json()["cursor"]
    return cursor


def _facts(client: Client, partition: str, *texts: str) -> None:
    for text in texts:
        remember(client, partition, text)


def test_update_target_changed_after_cursor_conflicts(host: Client) -> None:
    """The item changed after the recall: 409 conflict, and the item keeps the other edit."""
    p = "cursor-update"
    _facts(host, p, "Dana works at Acme", "Dana has two cats")
    cursor = _cursor(host, p)
    assert send(host, tool("update", {"n": 1, "text": "Dana works at Globex"},
                           partition=p)).status_code == 200
    r = send(host, tool("update", {"n": 1, "text": "Dana works at Initech"}, cursor=cursor,
                        partition=p))
    error = assert_error(r, 409, "conflict")
    assert error["details"] == {"n": 1}
    assert send(host, recall(None, partition=p)).json()["text"].startswith(
        "1. Dana works at Globex")


def test_forget_target_changed_after_cursor_conflicts(host: Client) -> None:
    """Forgetting an item edited after the recall: 409 conflict, nothing forgotten."""
    p = "cursor-forget"
    _facts(host, p, "Eve plays the violin")
    cursor = _cursor(host, p)
    send(host, tool("update", {"n": 1, "text": "Eve plays the cello"}, partition=p))
    assert_error(send(host, tool("forget", {"n": 1}, cursor=cursor, partition=p)), 409,
                 "conflict")
    assert send(host, recall(None, partition=p)).json()["text"] == "1. Eve plays the cello"


def test_update_target_forgotten_after_cursor_conflicts(host: Client) -> None:
    """The item vanished after the recall: 409 (recall again), not 404."""
    p = "cursor-vanished"
    _facts(host, p, "Frank drives a van")
    cursor = _cursor(host, p)
    send(host, tool("forget", {"n": 1}, partition=p))
    assert_error(send(host, tool("update", {"n": 1, "text": "Frank drives a bus"}, cursor=cursor,
                                 partition=p)), 409, "conflict")


def test_update_forgotten_before_cursor_not_found(host: Client) -> None:
    """The item was already gone when the recall ran: 404 not_found."""
    p = "cursor-gone-before"
    _facts(host, p, "Gina owns a boat")
    send(host, tool("forget", {"n": 1}, partition=p))
    cursor = _cursor(host, p)
    assert_error(send(host, tool("update", {"n": 1, "text": "Gina owns two boats"},
                                 cursor=cursor, partition=p)), 404, "not_found")


def test_edit_other_item_after_cursor_applies(host: Client) -> None:
    """Edits to other items in between do not conflict."""
    p = "cursor-other"
    _facts(host, p, "Hank is a chef", "Hank lives in Oslo")
    cursor = _cursor(host, p)
    send(host, tool("update", {"n": 1, "text": "Hank is a baker"}, partition=p))
    r = send(host, tool("update", {"n": 2, "text": "Hank lives in Bergen"}, cursor=cursor,
                        partition=p))
    assert r.status_code == 200
    assert r.json() == {"result": {"status": "stored", "n": 2, "count": 2}}


def test_two_edits_under_one_cursor_both_apply(host: Client) -> None:
    """Tools of one response share the cursor: edits to different items both apply."""
    p = "cursor-shared"
    _facts(host, p, "Ivy likes jazz", "Ivy likes rock", "Ivy likes folk")
    cursor = _cursor(host, p)
    r1 = send(host, tool("update", {"n": 1, "text": "Ivy loves jazz"}, cursor=cursor,
                         partition=p))
    r2 = send(host, tool("forget", {"n": 3}, cursor=cursor, partition=p))
    r3 = send(host, tool("remember", {"text": "Ivy likes blues"}, cursor=cursor, partition=p))
    assert [r.status_code for r in (r1, r2, r3)] == [200, 200, 200]
    # "Ivy likes rock" is listed as what the new fact may restate (the fake embedder's cosine)
    assert r3.json()["result"] == {"status": "stored", "n": 4, "count": 3, "similar": [
        {"n": 2, "text": "Ivy likes rock", "score": 0.6667}]}
    text = send(host, recall(None, partition=p)).json()["text"]
    assert sorted(text.split("\n")) == ["1. Ivy loves jazz", "2. Ivy likes rock",
                                        "4. Ivy likes blues"]


def test_update_without_cursor_applies_to_current(host: Client) -> None:
    """No cursor: the edit applies to the current state."""
    p = "no-cursor"
    _facts(host, p, "Jon is 30")
    send(host, tool("update", {"n": 1, "text": "Jon is 31"}, partition=p))
    r = send(host, tool("update", {"n": 1, "text": "Jon is 32"}, partition=p))
    assert r.json() == {"result": {"status": "stored", "n": 1, "count": 1}}


def test_remember_retry_replays_byte_for_byte(host: Client) -> None:
    """Same operationId and body: the original bytes again, and no second item."""
    p = "replay-remember"
    body = tool("remember", {"text": "Kim's passport expires in May"}, partition=p)
    first = send(host, body)
    again = send(host, body)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert first.json() == {"result": {"status": "stored", "n": 1, "count": 1}}
    assert remember(host, p, "another fact")["n"] == 2


def test_forget_retry_replays_after_item_gone(host: Client) -> None:
    """A retried forget replays its result instead of answering 404 for the forgotten item."""
    p = "replay-forget"
    _facts(host, p, "Lee has a dog")
    body = tool("forget", {"n": 1}, partition=p)
    first = send(host, body)
    again = send(host, body)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.content == first.content
    assert first.json() == {"result": {"status": "stored", "n": 1, "count": 0,
                                       "forgotten": True}}


def test_update_retry_with_cursor_replays_not_conflicts(host: Client) -> None:
    """A retried update replays, though its own first attempt changed the item after the cursor."""
    p = "replay-update"
    _facts(host, p, "Max runs on Sundays")
    cursor = _cursor(host, p)
    body = tool("update", {"n": 1, "text": "Max runs on Saturdays"}, cursor=cursor, partition=p)
    first = send(host, body)
    again = send(host, body)
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.content == first.content


def test_retry_with_other_arguments_is_mismatch(host: Client) -> None:
    """Same operationId, different arguments: 409 idempotency_mismatch, nothing written."""
    p = "mismatch-args"
    body = tool("remember", {"text": "Nia speaks Welsh"}, partition=p)
    assert send(host, body).status_code == 200
    changed = {**body, "arguments": {"text": "Nia speaks Irish"}}
    error = assert_error(send(host, changed), 409, "idempotency_mismatch")
    assert error["details"] == {"operationId": body["operationId"]}
    assert send(host, recall(None, partition=p)).json()["text"] == "1. Nia speaks Welsh"


def test_retry_with_other_tool_is_mismatch(host: Client) -> None:
    """Same operationId, different tool: 409 idempotency_mismatch."""
    p = "mismatch-tool"
    _facts(host, p, "Oscar is tall")
    body = tool("update", {"n": 1, "text": "Oscar is short"}, partition=p)
    assert send(host, body).status_code == 200
    other = {**body, "tool": "forget", "arguments": {"n": 1}}
    assert_error(send(host, other), 409, "idempotency_mismatch")


def test_retry_with_other_cursor_is_mismatch(host: Client) -> None:
    """Same operationId, different cursor: 409 idempotency_mismatch."""
    p = "mismatch-cursor"
    _facts(host, p, "Pia reads sci-fi", "Pia reads poetry")
    cursor = _cursor(host, p)
    body = tool("update", {"n": 2, "text": "Pia reads essays"}, cursor=cursor, partition=p)
    assert send(host, body).status_code == 200
    assert_error(send(host, {**body, "cursor": _cursor(host, p)}), 409, "idempotency_mismatch")


def test_same_operation_id_other_partition_independent(host: Client) -> None:
    """Deduplication is by (partition, operationId): another partition is a new write."""
    a = tool("remember", {"text": "Quinn likes maps"}, partition="dedupe-a", operation_id="same")
    b = tool("remember", {"text": "Quinn likes globes"}, partition="dedupe-b",
             operation_id="same")
    assert send(host, a).json()["result"]["n"] == 1
    assert send(host, b).json()["result"] == {"status": "stored", "n": 1, "count": 1}


def test_duplicate_remember_replays_existing(host: Client) -> None:
    """A duplicate text under a new id answers existing; its retry replays that answer."""
    p = "dup-replay"
    _facts(host, p, "Rae bakes bread")
    body = tool("remember", {"text": "rae bakes  BREAD"}, partition=p)
    first, again = send(host, body), send(host, body)
    assert first.json() == {"result": {"status": "stored", "n": 1, "count": 1, "existing": True}}
    assert again.content == first.content


def test_search_is_not_deduplicated(host: Client) -> None:
    """Reads are not recorded: the same operationId sees newer data."""
    p = "search-fresh"
    body = tool("search", {"query": "violin"}, partition=p)
    assert send(host, body).json()["result"]["count"] == 0
    _facts(host, p, "Sam plays violin")
    assert send(host, body).json()["result"]["count"] == 1
