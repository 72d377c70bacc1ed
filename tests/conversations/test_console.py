"""The console's sessions page in process (the whole app): listed, opened, forgotten whole
through a CSRF-checked form; signed-out and provider-token visitors are turned away."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from semmem.web.console.session import COOKIE
from tests.support.server import AUTH, JSON, TOKEN
from tests.support.web import wait_ready
from tests.web.test_console import console_client, post, sessions_of, sign_in, text_of


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with console_client(tmp_path / "db") as c:
        wait_ready(c)
        yield c


def ingest(client: TestClient, session: str, *texts: str) -> None:
    body = {"version": 1, "operationId": f"op-{session}", "partition": "a",
            "sessionId": session,
            "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": t,
                          "at": f"2024-02-0{i + 1}T08:00:00Z"} for i, t in enumerate(texts)]}
    r = client.post("/ingest", content=json.dumps(body), headers={**AUTH, **JSON})
    assert r.status_code == 200, r.text


def test_sessions_are_listed_opened_and_forgotten_from_the_console(client: TestClient) -> None:
    ingest(client, "trip <Oslo>", "I fly to Oslo on May 20.", "Have a good flight!")
    ingest(client, "kitchen", "The air fryer makes crispy chickpeas.")
    assert client.get("/console/sessions?p=a").status_code == 303  # signed out: sign in
    csrf = sign_in(client)
    listed = client.get("/console/sessions?p=a")
    assert listed.status_code == 200
    shown = text_of(listed.text)
    assert "trip <Oslo>" in shown and "kitchen" in shown
    assert "<Oslo>" not in listed.text  # escaped, never markup
    assert 'href="/console/sessions?p=a"' in client.get("/console/partition?p=a").text
    opened = client.get("/console/session", params={"p": "a", "s": "trip <Oslo>"})
    assert opened.status_code == 200
    page = text_of(opened.text)
    assert page.index("I fly to Oslo on May 20.") < page.index("Have a good flight!")
    assert "assistant" in page and "2024-02-01T08:00:00.000Z" in page
    assert post(client, "/session/forget", "0" * 64, p="a", s="kitchen").status_code == 403
    r = post(client, "/session/forget", csrf, p="a", s="kitchen")
    assert r.status_code == 303 and "done=sessionforgot" in r.headers["location"]
    after = client.get(r.headers["location"])
    assert "Session forgotten: 1 piece(s)." in text_of(after.text)
    assert "kitchen" not in text_of(after.text).replace("Session forgotten", "")
    gone = client.get("/console/session", params={"p": "a", "s": "kitchen"})
    assert gone.status_code == 404


def test_a_provider_token_cannot_open_or_forget_sessions(client: TestClient) -> None:
    ingest(client, "s", "hello there")
    forged = sessions_of(client).start(TOKEN)
    client.cookies.set(COOKIE, forged.cookie)
    assert client.get("/console/sessions?p=a").status_code == 403
    forged = sessions_of(client).start(TOKEN)  # the refusal ended the first one
    client.cookies.set(COOKIE, forged.cookie)
    assert post(client, "/session/forget", forged.csrf, p="a", s="s").status_code == 403
    listed = client.get("/admin/sessions", params={"partition": "a"},
                        headers={"Authorization": "Bearer admin-token-console"})
    assert [s["sessionId"] for s in listed.json()["sessions"]] == ["s"]
