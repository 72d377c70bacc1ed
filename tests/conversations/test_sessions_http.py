"""A partition's sessions through the admin API on a real server: listed, opened in order,
forgotten whole — and then in no file of the store, text or vector (positive control first)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import httpx
import pytest

from semmem.embedding.fakes import HashingEmbedder
from tests.support.files import decoded_with
from tests.support.server import ADMIN, AUTH, JSON, ServerProcess
from tests.support.web import assert_error, send, tool

RETENTION, DELAY = 1.0, 0.1
WINDOW = 5.0 + DELAY + 1.0 + 5.0 + DELAY  # the forget window with the fence's 5 s floor


def ingest(c: httpx.Client, partition: str, session: str, messages: list[tuple[str, str]],
           op: str) -> dict[str, object]:
    r = send(c, {"version": 1, "operationId": op, "partition": partition, "sessionId": session,
                 "messages": [{"role": role, "content": text, "at": f"2024-01-0{i + 1}T09:00:00Z"}
                              for i, (role, text) in enumerate(messages)]},
             {**AUTH, **JSON}, path="/ingest")
    assert r.status_code == 200, r.text
    body: dict[str, object] = r.json()
    return body


@pytest.mark.timeout(180)
def test_a_session_is_listed_opened_and_forgotten_whole_out_of_every_file(
        tmp_path: Path) -> None:
    data = tmp_path / "db"
    server = ServerProcess(data, env={"SEMMEM_VERSION_RETENTION_S": str(RETENTION),
                                      "SEMMEM_MAINTENANCE_DELAY_S": str(DELAY)}).start()
    secret = f"mark{uuid.uuid4().hex}"
    secret_text = f"My locker code is {secret}, please keep it."
    try:
        server.wait_ready()
        with server.client() as c:
            ingest(c, "p", "gone", [("user", secret_text), ("assistant", "I will remember.")],
                   "ingest-1")
            ingest(c, "p", "kept", [("user", "I prefer window seats on long flights.")],
                   "ingest-2")
            send(c, tool("remember", {"text": "Lives in Lisbon"}, partition="p"))
            listed = c.get("/admin/sessions", params={"partition": "p"}, headers=ADMIN).json()
            assert [s["sessionId"] for s in listed["sessions"]] == ["gone", "kept"]
            assert listed["sessions"][0] | {"messages": 2, "pieces": 2,
                                            "firstAt": "2024-01-01T09:00:00.000Z",
                                            "lastAt": "2024-01-02T09:00:00.000Z"} \
                == listed["sessions"][0]
            opened = c.get("/admin/session", params={"partition": "p", "session": "gone"},
                           headers=ADMIN).json()["session"]
            assert [(m["role"], [i["text"] for i in m["items"]]) for m in opened["messages"]] \
                == [("user", [secret_text]), ("assistant", ["I will remember."])]
            vector = HashingEmbedder().embed_batch([secret_text])[0]
            assert decoded_with(data, text=secret) and decoded_with(data, vector=vector)
            r = c.delete("/admin/session", params={"partition": "p", "session": "gone"},
                         headers=ADMIN)
            assert r.status_code == 200, r.text
            assert r.json()["count"] == 2
            assert_error(c.get("/admin/session", params={"partition": "p", "session": "gone"},
                               headers=ADMIN), 404, "not_found")
            assert_error(c.delete("/admin/session", params={"partition": "p",
                                                             "session": "gone"},
                                  headers=ADMIN), 404, "not_found")
            found = send(c, tool("search", {"query": "locker code seats Lisbon", "limit": 10},
                                 partition="p")).json()["result"]
            assert secret not in str(found) and found["count"] == 2, (secret, json.dumps(found))
            listed = c.get("/admin/sessions", params={"partition": "p"}, headers=ADMIN).json()
            assert [s["sessionId"] for s in listed["sessions"]] == ["kept"]
        deadline = time.monotonic() + WINDOW + 30
        while decoded_with(data, text=secret) or decoded_with(data, vector=vector):
            assert time.monotonic() < deadline, "the session's text is still on disk"
            time.sleep(0.5)
    finally:
        server.stop()
    assert "Traceback" not in server.output()
