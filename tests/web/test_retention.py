"""Retention over HTTP: the admin API's policy round trips, an owner's expiresAt edit, and the
remember tool's optional expires_at (off unless the owner turns it on)."""

from __future__ import annotations

import time
from pathlib import Path

from semmem.items import iso, now_ms
from semmem.protocol.declaration import tools_declaration
from tests.support.server import ADMIN
from tests.support.web import app_client, assert_error, recall, remember, send, tool


def test_admin_retention_round_trips(tmp_path: Path) -> None:
    """show → preview → set → show: the override is stored, what it expires is forgotten at
    once, inherit removes it; bad values are the error envelope."""
    with app_client(tmp_path / "db", retention="90d") as c:
        for text in ("Ann speaks Greek", "Ann lives in Rome"):
            remember(c, "a", text)
        remember(c, "b", "Ben has a kayak")
        r = c.get("/admin/retention", headers=ADMIN)
        assert r.status_code == 200 and r.json() == {"default": "90d", "overrides": []}
        written = now_ms()
        while now_ms() < written + 1100:  # the facts are a second old
            time.sleep(0.05)
        fresh = remember(c, "a", "Ann runs marathons")["n"]
        r = c.get("/admin/retention/preview", params={"policy": "1s", "partition": "a"},
                  headers=ADMIN)
        assert r.status_code == 200, r.text
        assert r.json() == {"policy": "1s", "expire": 2,
                            "partitions": [{"partition": "a", "count": 3, "expire": 2}]}
        r = c.get("/admin/retention/preview", params={"policy": "never"}, headers=ADMIN)
        assert r.json()["expire"] == 0 and len(r.json()["partitions"]) == 2
        r = c.put("/admin/retention", params={"partition": "a", "policy": "12h"}, headers=ADMIN)
        assert r.status_code == 200, r.text
        assert (r.json()["effective"], r.json()["expired"]) == ("12h", [])
        r = c.put("/admin/retention", params={"partition": "b", "policy": "never"}, headers=ADMIN)
        assert r.json()["override"] == "never"
        shown = c.get("/admin/retention", headers=ADMIN).json()
        assert shown["overrides"] == [{"partition": "a", "override": "12h"},
                                      {"partition": "b", "override": "never"}]
        due = c.get("/admin/retention", params={"partition": "a"}, headers=ADMIN).json()
        assert due["effective"] == "12h" and due["due"] == 3 and due["count"] == 3
        assert [it["n"] for it in due["items"]] == [1, 2, 3]  # soonest first
        r = c.put("/admin/retention", params={"partition": "a", "policy": "1s"}, headers=ADMIN)
        assert r.json()["expired"] == [1, 2] and r.json()["effective"] == "1s"
        listed = c.get("/admin/items", params={"partition": "a"}, headers=ADMIN).json()
        assert [it["n"] for it in listed["items"]] == [fresh] or listed["count"] == 0
        r = c.put("/admin/retention", params={"partition": "a", "policy": "inherit"},
                  headers=ADMIN)
        assert r.json()["override"] == "inherit" and r.json()["effective"] == "90d"
        for params in ({"partition": "a", "policy": "0s"}, {"partition": "a", "policy": "5w"},
                       {"policy": "1d"}):
            assert_error(c.put("/admin/retention", params=params, headers=ADMIN), 400,
                         "invalid_request")
        assert_error(c.get("/admin/retention/preview", params={"policy": "inherit"},
                           headers=ADMIN), 400, "invalid_request")


def test_admin_expires_at_edit_hides_the_fact(tmp_path: Path) -> None:
    """PATCH sets expiresAt (normalised), a past one takes the fact out of listing, export
    and recall at once; a value that is no timestamp is refused."""
    with app_client(tmp_path / "db") as c:
        n = remember(c, "a", "Ann is in Paris this week")["n"]
        soon = iso(now_ms() + 600_000)
        r = c.patch("/admin/items", params={"partition": "a", "n": n},
                    json={"expiresAt": soon}, headers=ADMIN)
        assert r.status_code == 200, r.text
        assert r.json()["item"]["expiresAt"] == soon
        assert "Paris" in c.get("/admin/export", params={"partition": "a"}, headers=ADMIN).text
        r = c.patch("/admin/items", params={"partition": "a", "n": n},
                    json={"expiresAt": "soon"}, headers=ADMIN)
        assert_error(r, 422, "invalid_arguments")
        r = c.patch("/admin/items", params={"partition": "a", "n": n},
                    json={"expiresAt": iso(now_ms() - 1)}, headers=ADMIN)
        assert r.status_code == 200 and r.json()["item"] is None and r.json()["count"] == 0
        assert c.get("/admin/export", params={"partition": "a"}, headers=ADMIN).text == ""
        assert "Paris" not in send(c, recall("where is Ann")).text
        assert c.get("/admin/stats", params={"partition": "a"}, headers=ADMIN).json()[
            "count"] == 0


def test_remember_tool_takes_expires_at_only_when_turned_on(tmp_path: Path) -> None:
    """Off by default: the declared tools have no expires_at and a call with it is refused
    by the schema; turned on, the fact ends when it says."""
    declared = {t["name"]: t for t in tools_declaration()}
    assert "expires_at" not in declared["remember"]["input"]["properties"]
    turned_on = {t["name"]: t for t in tools_declaration(expiry=True)}
    schema = turned_on["remember"]["input"]
    assert set(schema["properties"]) == {"text", "expires_at"} and schema["required"] == ["text"]
    assert "until Friday" in schema["properties"]["expires_at"]["description"]
    ends = iso(now_ms() + 800)
    with app_client(tmp_path / "off") as c:
        r = send(c, tool("remember", {"text": "in Paris until Friday", "expires_at": ends}))
        assert_error(r, 422, "invalid_arguments")
    with app_client(tmp_path / "on", tool_expiry=True) as c:
        ends = iso(now_ms() + 1500)
        r = send(c, tool("remember", {"text": "in Paris until Friday", "expires_at": ends}))
        assert r.status_code == 200, r.text
        assert "Paris" in send(c, recall(None)).text
        started = time.monotonic()
        while "Paris" in send(c, recall(None)).text:
            assert time.monotonic() - started < 10
            time.sleep(0.05)
        r = send(c, tool("remember", {"text": "x", "expires_at": "Friday"}))
        assert_error(r, 422, "invalid_arguments")
        r = send(c, tool("remember", {"text": "x", "expires_at": iso(now_ms() - 1000)}))
        assert_error(r, 422, "invalid_arguments")  # a fact that ended already: refused
        assert "has passed" in r.json()["error"]["message"]
